/** What the CLI prints: lines, JSON for scripts, tables with a header row, statuses in colour on a terminal. */
export interface Output {
  line(text: string): void;
  /** `value` as indented JSON. */
  json(value: unknown): void;
  /** Rows under a header row, columns padded; `empty` when there are none ("no dead tasks"). */
  table(header: string[], rows: string[][], empty: string): void;
  /** A status in its colour (green success, red failed, yellow running …) on a terminal; plain when piped. */
  status(status: string): string;
}

const COLOURS: Record<string, number> = {
  success: 32,
  completed: 32,
  ok: 32,
  enabled: 32,
  failed: 31,
  dead: 31,
  cancelled: 31,
  timed_out: 31,
  disabled: 31,
  running: 33,
  retrying: 33,
  sleeping: 36,
  reused: 36,
  waiting: 36,
  pending: 36,
  ready: 36,
  partial_success: 33,
};

// eslint-disable-next-line no-control-regex
// biome-ignore lint/suspicious/noControlCharactersInRegex: matches the ANSI colour codes it strips
const ANSI = /\x1b\[[0-9;]*m/g;

/** `count` and the noun, plural when it is not one: `plural(1, 'step')` → '1 step'. */
export function plural(count: number, noun: string, many = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : many}`;
}

/**
 * An Output writing to `write`; colours only when `colour` (a TTY without NO_COLOR, decided by the caller).
 *
 * @example const out = output((s) => process.stdout.write(s), process.stdout.isTTY && !process.env.NO_COLOR);
 */
export function output(write: (text: string) => void, colour: boolean): Output {
  const line = (text: string) => write(`${text}\n`);
  return {
    line,
    json: (value) => line(JSON.stringify(value, null, 2)),
    status: (status) => (colour && COLOURS[status] ? `\x1b[${COLOURS[status]}m${status}\x1b[0m` : status),
    table(header, rows, empty) {
      if (rows.length === 0) return line(empty);
      const all = [header, ...rows];
      const width = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').replace(ANSI, '').length)));
      const pad = (cell: string, i: number) =>
        i === header.length - 1 ? cell : cell + ' '.repeat(width[i]! - cell.replace(ANSI, '').length);
      line(
        header
          .map((h, i) => pad(colour ? `\x1b[1m${h}\x1b[0m` : h, i))
          .join('  ')
          .trimEnd(),
      );
      for (const row of rows)
        line(
          row
            .map((c, i) => pad(c ?? '', i))
            .join('  ')
            .trimEnd(),
        );
    },
  };
}
