import type { Journal } from '../../journal/journal.js';
import { RUN_EVENT } from '../events.js';
import { runStream } from './history.js';
import type { Pass } from './pass.js';

/** A pass's watch for cancellations: listening from before its history read (`start` once the pass exists). */
export interface CancelWatch {
  start(version: number, pass: Pass): void;
  stop(): Promise<void>;
}

/**
 * While a pass runs, a cancellation appended by any process reaches it: on a wake-up, and on the
 * poll (SQLite wakes only its own process). The watch listens before the pass reads its history,
 * so a cancellation that commits after that read wakes it: it reads only when the run's stream
 * moved past the history the pass read, never just to be sure.
 */
export async function watchCancel(journal: Journal, id: string, pollMs: number): Promise<CancelWatch> {
  const stream = runStream(id);
  let pass: Pass | undefined;
  let seen = Number.MAX_SAFE_INTEGER;
  /** A wake-up before the pass started: the highest version it named (Infinity: it named none). */
  let early = 0;
  let checking = false;
  const check = () => {
    if (!pass || checking || pass.isCancelled) return;
    const running = pass;
    checking = true;
    journal
      .readStream(stream, { fromVersion: seen + 1 })
      .then((events) => {
        seen = events.at(-1)?.version ?? seen;
        if (events.some((e) => e.type === RUN_EVENT.runCancelRequested)) running.cancel();
      })
      .catch(() => {})
      .finally(() => (checking = false));
  };
  // the pass's own writes wake it too, and the commit of the history it began with: those need no read
  // it acts on each notice itself (reads, or notes an early one): its Wakeup is never waited on
  const watch = await journal.watch((s, version) => {
    if (s !== '' && s !== stream) return false;
    if (!pass) early = Math.max(early, s === '' || version === undefined ? Number.POSITIVE_INFINITY : version);
    else if (!(version !== undefined && (version <= seen || pass.wrote(version)))) check();
    return false;
  });
  const poll = setInterval(check, pollMs);
  return {
    start: (version, running) => {
      pass = running;
      seen = version;
      if (early > version) check();
    },
    stop: async () => {
      clearInterval(poll);
      await watch.stop();
    },
  };
}
