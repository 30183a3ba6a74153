/**
 * Named points where durable engines break (between a write and its commit, after a commit and
 * before the reply). Inert unless a test process arms one; then reaching it kills the process
 * with SIGKILL on the spot, the way a power cut or an OOM kill would.
 */
export type CrashPointName =
  | 'journal:beforeCommit'
  | 'journal:afterCommit'
  | 'task:beforeComplete'
  | 'task:afterComplete'
  | 'subscription:beforeAdvance'
  | 'reply:afterGenerate'
  | 'session:afterRecord'
  | 'execution:fallback'
  | 'execution:afterFallback'
  | 'rate:afterTake'
  | 'effect:afterCall';

let armed: { name: CrashPointName; after: number } | null = null;

/** Arms `name`: the process dies when it reaches that point for the `after + 1`-th time. */
export function armCrashPoint(name: CrashPointName, after = 0): void {
  armed = { name, after };
}

export function crashPoint(name: CrashPointName): void {
  if (armed?.name !== name) return;
  if (armed.after-- > 0) return;
  process.kill(process.pid, 'SIGKILL');
}
