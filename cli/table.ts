/** Plain-text tables for `--format table`: one header row, columns padded to their widest cell. */

/** Renders `rows` under `columns`; a missing or null cell prints as `-`. */
export function renderTable(
  columns: ReadonlyArray<{ header: string; value: (row: never) => unknown }>,
  rows: readonly unknown[],
): string {
  const cells = rows.map((row) =>
    columns.map((c) => {
      const v = (c.value as (r: unknown) => unknown)(row);
      return v === undefined || v === null || v === '' ? '-' : String(v);
    }),
  );
  const widths = columns.map((c, i) =>
    Math.max(c.header.length, ...cells.map((r) => (r[i] ?? '').length)),
  );
  const line = (r: string[]) =>
    r
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return `${[line(columns.map((c) => c.header.toUpperCase())), ...cells.map(line)].join('\n')}\n`;
}
