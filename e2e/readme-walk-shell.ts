import { execFileSync } from 'node:child_process';

/**
 * The README's shell blocks as commands, and terminals to type them into: the helpers of
 * readme-walk.int.test.ts. A tmux server of its own (`-L`), one shell per window, read by capture-pane.
 */

/** The ```sh blocks of the README section whose heading starts with `heading`, in order. */
export function sectionBlocks(readme: string, heading: string): string[] {
  const start = readme.indexOf(`\n## ${heading}`);
  if (start < 0) throw new Error(`README has no section "## ${heading}"`);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/**
 * A shell block cut into the commands a person types: comments dropped (a `#` outside quotes, at a
 * line's start or after a space), a line ending in `\` or inside an open quote joined to the next with
 * a space (JSON does not mind), so each command is typed as one line.
 */
export function shellCommands(block: string): string[] {
  const commands: string[] = [];
  let current = '';
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < block.length; i++) {
    const c = block[i]!;
    if (quote === "'") {
      if (c === "'") quote = null;
      current += c === '\n' ? ' ' : c;
    } else if (c === '\\' && block[i + 1] === '\n') {
      i++;
      current += ' ';
    } else if (c === '\\') {
      current += c + (block[i + 1] ?? '');
      i++;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      current += c === '\n' ? ' ' : c;
    } else if (c === '"' || c === "'") {
      quote = c;
      current += c;
    } else if (c === '#' && (current === '' || /\s$/.test(current))) {
      while (i + 1 < block.length && block[i + 1] !== '\n') i++;
    } else if (c === '\n') {
      if (current.trim()) commands.push(current.replace(/\s+/g, ' ').trim());
      current = '';
    } else {
      current += c;
    }
  }
  if (current.trim()) commands.push(current.replace(/\s+/g, ' ').trim());
  return commands;
}

export async function poll<T>(
  what: string,
  check: () => T | undefined | false,
  timeoutMs: number,
  context: () => string = () => '',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms\n${context().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Terminals on a tmux server of their own; windows by name (tmux renames a window after its command). */
export class Terminals {
  private readonly socket = `runledger-readme-walk-${process.pid}`;
  private readonly index = new Map<string, number>();
  private marker = 0;

  constructor(
    private readonly dir: string,
    private readonly env: Record<string, string>,
  ) {}

  tmux(...args: string[]): string {
    return execFileSync('tmux', ['-L', this.socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  }

  /** A newcomer's shell: a clean environment (no RUNLEDGER_* or DATABASE_URL from the test's own), history long enough for a server's log. */
  open(name: string): void {
    const shell = [
      'env',
      '-i',
      ...Object.entries(this.env).map(([k, v]) => `${k}=${v}`),
      'PS1=walk$ ',
      'bash',
      '--norc',
      '--noprofile',
    ];
    if (this.index.size === 0) {
      this.tmux('new-session', '-d', '-s', 'walk', '-x', '250', '-y', '50', '-c', this.dir, 'sleep', '3600');
      this.tmux('set-option', '-g', 'history-limit', '200000');
    }
    const id = this.tmux('new-window', '-P', '-F', '#{window_index}', '-t', 'walk', '-c', this.dir, ...shell).trim();
    this.index.set(name, Number(id));
  }

  names(): string[] {
    return [...this.index.keys()];
  }

  private target(name: string): string {
    return `walk:${this.index.get(name)}`;
  }

  screen(name: string): string {
    return this.tmux('capture-pane', '-p', '-J', '-S', '-', '-t', this.target(name));
  }

  keys(name: string, ...keys: string[]): void {
    this.tmux('send-keys', '-t', this.target(name), ...keys);
  }

  /**
   * Types `line` and Enter between two markers: one printed before it, one printing its exit code after
   * it (a line ending in `&` cannot take `;`; the leading newline ends output that has none, like curl's
   * JSON). Returns the tag to wait for. The echo of the typed line is not searched: a background
   * server's output can land in the middle of it.
   */
  launch(name: string, line: string): string {
    const tag = `__done_${++this.marker}__`;
    const tail = `printf '\\n%s=%d\\n' ${tag} $?`;
    this.keys(name, '-l', `printf '%s\\n' ${tag}_; ${line.endsWith('&') ? `${line} ${tail}` : `${line}; ${tail}`}`);
    this.keys(name, 'Enter');
    return tag;
  }

  /** What the screen shows since the command of `tag` started. */
  since(name: string, tag: string): string {
    const text = this.screen(name);
    const start = new RegExp(`^${tag}_$`, 'gm');
    let at = -1;
    for (const m of text.matchAll(start)) at = m.index + m[0].length + 1;
    return at < 0 ? '' : text.slice(at);
  }

  async finished(name: string, tag: string, timeoutMs: number): Promise<{ printed: string; code: number }> {
    const done = new RegExp(`^${tag}=(\\d+)$`, 'm');
    const printed = await poll(
      `"${tag}" in ${name}`,
      () => (done.test(this.since(name, tag)) ? this.since(name, tag) : undefined),
      timeoutMs,
      () => this.screen(name).slice(-3000),
    );
    return { printed: printed.slice(0, printed.search(done)).trim(), code: Number(done.exec(printed)![1]) };
  }

  /**
   * Ctrl-C to the command started with `tag`; resolves when the prompt is back. A command that dies of
   * SIGINT (npm does) makes bash drop the rest of the line, the exit-code marker too: its code is then 130.
   */
  async interrupt(name: string, tag: string, timeoutMs = 20_000): Promise<{ printed: string; code: number }> {
    this.keys(name, 'C-c');
    const printed = await poll(
      `the prompt after Ctrl-C in ${name}`,
      () => (/^walk\$ /m.test(this.since(name, tag)) ? this.since(name, tag) : undefined),
      timeoutMs,
      () => this.screen(name).slice(-3000),
    );
    const code = new RegExp(`^${tag}=(\\d+)$`, 'm').exec(printed)?.[1];
    return { printed, code: code === undefined ? 130 : Number(code) };
  }

  /** Types `line` and waits for it to end. */
  async run(name: string, line: string, timeoutMs = 30_000): Promise<{ printed: string; code: number }> {
    return this.finished(name, this.launch(name, line), timeoutMs);
  }

  kill(): void {
    try {
      this.tmux('kill-server');
    } catch {
      // already gone
    }
  }
}
