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

/** `(?, ?), (?, ?)`: the placeholders of `rows` rows of `columns` values. */
export function placeholders(rows: number, columns: number): string {
  return Array.from({ length: rows }, () => `(${Array.from({ length: columns }, () => '?').join(', ')})`).join(', ');
}
