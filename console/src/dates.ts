/** Times between the API's RFC 3339 and the browser's `datetime-local` inputs. */

/** RFC 3339 as a `datetime-local` value, in the viewer's own time. */
export function rfc3339ToLocal(value: string): string {
  if (!value) return '';
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return '';
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}`;
}

/** A `datetime-local` value (the viewer's own time) as RFC 3339 in UTC. */
export function localToRfc3339(value: string): string | undefined {
  if (!value) return undefined;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return undefined;
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
