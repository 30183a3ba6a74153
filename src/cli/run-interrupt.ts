import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';

/** The reason a cancel asked for at the prompt is journaled with (brief 004 §8.1: "Ctrl+C"). */
export const TERMINAL_REASON = 'cancelled from the terminal';

/**
 * Asks "cancel the run? [y/N]" on `output` and reads one line of `input`: true for y or yes (any case),
 * false for anything else, Enter alone, the end of the input, or `signal` (the question is taken back).
 *
 * @example if (await askCancel(process.stdin, process.stderr)) await c.cancelRun(id, TERMINAL_REASON);
 */
export function askCancel(input: Readable, output: Writable, signal?: AbortSignal): Promise<boolean> {
  // not a terminal interface: the line discipline stays cooked, so a second Ctrl-C is a SIGINT again
  const rl = createInterface({ input, output, terminal: false });
  signal?.addEventListener('abort', () => rl.close(), { once: true });
  output.write('\ncancel the run? [y/N] ');
  return new Promise((resolve) => {
    let answered = false;
    rl.once('line', (line) => {
      answered = true;
      rl.close();
      resolve(/^\s*y(es)?\s*$/i.test(line));
    });
    rl.once('close', () => {
      if (!answered) resolve(false);
    });
  });
}

export interface Interruptible {
  /** Whether a person is at a terminal to ask (stdin is a TTY). */
  terminal: boolean;
  input: Readable;
  /** Where the question goes (stderr: stdout may be the run's output). */
  prompt: Writable;
  line(text: string): void;
  /** Cancels the run with TERMINAL_REASON. */
  cancel(): Promise<void>;
  /** The command that follows the run again: printed when Ctrl-C detaches. */
  followCommand: string;
  /** Ends the process after a detach (exit code 130, as a Ctrl-C). */
  exit(code: number): void;
}

/**
 * Runs `wait` (following a run to its end) with Ctrl-C handled as brief 004 §8.1 has it: at a terminal
 * it asks "cancel the run? [y/N]"; y cancels the run and goes on waiting for its end (its compensations and
 * cancel confirmations show as they happen), N or Enter detaches, printing how to follow the run. Without a
 * terminal Ctrl-C detaches at once, as it always did. A second Ctrl-C during the question detaches too.
 * The SIGINT listener is removed when `wait` ends.
 */
export async function whileInterruptible<T>(how: Interruptible, wait: () => Promise<T>): Promise<T> {
  let asking = false;
  let cancelled = false;
  // the run may end while the question is open: the question goes, and nothing is detached
  const ended = new AbortController();
  const detach = () => {
    if (ended.signal.aborted) return;
    how.line(`detached: the run goes on. follow it:  ${how.followCommand}`);
    how.exit(130);
  };
  const onInterrupt = () => {
    if (!how.terminal || asking || cancelled) return detach();
    asking = true;
    void askCancel(how.input, how.prompt, ended.signal).then(async (yes) => {
      asking = false;
      if (ended.signal.aborted) return;
      if (!yes) return detach();
      cancelled = true;
      how.line(`cancelling (${TERMINAL_REASON}); waiting for it to end…`);
      await how.cancel().catch((error: unknown) => {
        how.line(`the cancel failed: ${(error as Error).message}`);
        detach();
      });
    });
  };
  process.on('SIGINT', onInterrupt);
  try {
    return await wait();
  } finally {
    ended.abort();
    process.off('SIGINT', onInterrupt);
  }
}
