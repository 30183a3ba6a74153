import { ValidationError, type Problem } from '../errors.js';
import type { Store } from '../storage/store.js';

/** What a rule or a schedule starts: a stored workflow (by id) or code workflow (by name), or an agent session. */
export type Target = { workflow: string } | { agent: string };

export interface Started {
  run_id: string;
  kind: 'execution' | 'workflow' | 'session';
}

/**
 * Starts the runs rules and schedules name. `key` makes it idempotent: a repeated key returns the
 * run the first call started and starts nothing. With `tx`, the run starts in that transaction.
 */
export interface RunStarter {
  /** `trigger_type` says what started it (`event`, `schedule`): an execution records it; default `trigger`. */
  start(p: {
    target: Target;
    input: unknown;
    key: string;
    tx?: Store;
    trigger_type?: string;
    traceparent?: string;
  }): Promise<Started>;
  /** The target, checked: a ValidationError names `path` when it names nothing this server runs. */
  check(target: unknown, path: string): Promise<Target>;
}

/** `target` checked by `starter`, or undefined with what is wrong with it added to `problems`. */
export async function checkTarget(
  starter: RunStarter,
  target: unknown,
  problems: Problem[],
): Promise<Target | undefined> {
  try {
    return await starter.check(target, 'target');
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    problems.push(...error.problems);
    return undefined;
  }
}
