/** Times in API bodies are RFC 3339 in UTC to the second, e.g. `2026-05-01T12:00:00Z` (spec §2). */
export function rfc3339(date: Date): string {
  const iso = date.toISOString();
  // `YYYY-MM-DDTHH:mm:ss.sssZ`; years past 9999 have more digits, and keep the slower path.
  return iso.length === 24 ? `${iso.slice(0, 19)}Z` : iso.replace(/\.\d{3}Z$/, 'Z');
}

export function rfc3339OrNull(date: Date | undefined): string | null {
  return date ? rfc3339(date) : null;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;

/** Parses an RFC 3339 time; undefined when the text is not one. */
export function parseRfc3339(text: string): Date | undefined {
  if (!RFC3339.test(text)) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}
