/**
 * Several writes sent as one statement: `WITH w0 AS (INSERT …), w1 AS (UPDATE …) SELECT …`. Inside
 * a transaction this saves a round trip to the database per write, which under load is most of a
 * write's cost; the writes still commit or roll back together with the rest of the transaction.
 * PostgreSQL, CockroachDB and PGlite all run data-modifying CTEs.
 */
export class WriteBatch {
  readonly values: unknown[] = [];
  readonly #writes: string[] = [];

  /** The placeholder for `value`. */
  param(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  /**
   * Rows given as one array per column (see {@link columns}), as a query:
   * `SELECT … FROM unnest($1::T[], …)`, each column of the SQL type `types` names. The statement's
   * text is then the same whatever the number of rows. JSONB columns travel as text and are cast
   * back, which every database Spool runs on accepts.
   */
  rows(values: unknown[][], types: readonly string[]): string {
    const params = types.map(
      (type, i) => `${this.param(values[i] ?? [])}::${type === 'JSONB' ? 'TEXT' : type}[]`,
    );
    const names = types.map((_, i) => `c${i}`);
    const select = types.map((type, i) => (type === 'JSONB' ? `c${i}::JSONB` : `c${i}`));
    return `SELECT ${select.join(', ')} FROM unnest(${params.join(', ')}) AS v (${names.join(', ')})`;
  }

  /** Adds one INSERT, UPDATE or DELETE; answers the name its RETURNING rows go by. */
  add(sql: string): string {
    this.#writes.push(sql);
    return `w${this.#writes.length - 1}`;
  }

  /** The statement, answering `select` (which may read the writes' RETURNING rows). */
  text(select?: string): string {
    if (select === undefined && this.#writes.length === 1) return this.#writes[0] as string;
    const writes = this.#writes.map((sql, i) => `w${i} AS (${sql})`);
    return `WITH ${writes.join(', ')} ${select ?? 'SELECT 1'}`;
  }
}

/**
 * Rows as one array per column, for a statement that takes them as `unnest($1::T[], $2::U[], …)`:
 * its text stays the same whatever the number of rows, so the database parses and plans it as one
 * statement, where a `VALUES` list of n rows is a new statement of n × columns parameters.
 * `rows` must not be empty: the arrays would be missing.
 */
export function columns<T>(
  rows: readonly T[],
  row: (item: T, index: number) => unknown[],
): unknown[][] {
  const out: unknown[][] = [];
  rows.forEach((item, index) => {
    row(item, index).forEach((value, i) => {
      const column = out[i] ?? [];
      column.push(value);
      out[i] = column;
    });
  });
  return out;
}

/**
 * A value that is 1, or that fails the whole statement when `condition` holds: a division by
 * zero, SQLSTATE 22012, made on purpose. A statement sent with its COMMIT behind it cannot be
 * looked at before it commits; this lets it refuse to, and nothing it wrote is kept.
 */
export function failWhen(condition: string): string {
  return `1 / (CASE WHEN ${condition} THEN 0 ELSE 1 END)`;
}

/** Whether `err` is a statement failing on purpose, by {@link failWhen}. */
export function failedOnPurpose(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '22012';
}
