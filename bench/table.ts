export type Results = Record<string, Record<string, number>>;

/** Per-second rates as whole numbers, milliseconds to 2 decimals. */
export function rounded(metrics: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(metrics).map(([key, value]) => [
      key,
      key.endsWith('_ms') ? Math.round(value * 100) / 100 : Math.round(value),
    ]),
  );
}

/** Rows are metrics, columns backends; a backend that did not run shows a dash. */
export function formatTable(results: Results, backends: string[]): string {
  const metrics = [...new Set(backends.flatMap((b) => Object.keys(results[b] ?? {})))];
  const cell = (key: string, value: number | undefined) =>
    value === undefined ? '–' : key.endsWith('_ms') ? value.toFixed(2) : value.toLocaleString('en-US');
  const rows = [['metric', ...backends], ...metrics.map((m) => [m, ...backends.map((b) => cell(m, results[b]?.[m]))])];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row.map((text, i) => (i === 0 ? text.padEnd(widths[i]!) : text.padStart(widths[i]!))).join('  ');
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}
