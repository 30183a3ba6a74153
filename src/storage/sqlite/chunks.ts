/**
 * Rows per multi-row statement: better-sqlite3's call per statement costs more than the row, so
 * writes of many rows go 64 to a statement (measured: the drain's appends and completions).
 */
export const ROWS_PER_STATEMENT = 64;

/** `items` in runs of `size`, in order. */
export function chunks<T>(items: T[], size = ROWS_PER_STATEMENT): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * The SQL of a multi-row statement for `rows` rows, made once per count: made at every call (the
 * placeholders, then the whole text, which the statement cache then hashed) it was 3.7% of a
 * process running 10-step runs.
 */
export function bySize(make: (rows: number) => string): (rows: number) => string {
  const made = new Map<number, string>();
  return (rows) => {
    let sql = made.get(rows);
    if (sql === undefined) {
      sql = make(rows);
      made.set(rows, sql);
    }
    return sql;
  };
}

/** `(?, ?), (?, ?)`: the placeholders of `rows` rows of `columns` values. */
export function placeholders(rows: number, columns: number): string {
  return Array.from({ length: rows }, () => `(${Array.from({ length: columns }, () => '?').join(', ')})`).join(', ');
}
