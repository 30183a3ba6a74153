import { toMs } from '../../duration.js';
import { describeError, LeaseLostError, StepTimedOutError, TerminalError, ValidationError } from '../../errors.js';
import type { NewEvent, RateUse, Store } from '../../storage/store.js';
import { errorClassOf } from '../../observe/error-class.js';
import type { EngineEventMap } from '../../observe/events.js';
import { checkOutput, failureData, rebuild, retryDelay, Suspension, type FailureData } from './calls.js';
import type { History, Seq } from './history.js';
import type { PollOptions, StepContext } from '../workflow.js';
import { RUN_EVENT } from '../events.js';
import { rateDeferral, rateExtra, rateUses, takeRate } from './rate.js';

/** What `runPoll` needs of the pass it runs in. */
export interface PollHost {
  readonly runId: string;
  readonly history: History;
  readonly maxEventBytes: number;
  /** Journals `events` and runs `also` in the same transaction (a rate limit's take: see `takeRate`). */
  write(events: NewEvent[], also?: (tx: Store) => Promise<void>): Promise<void>;
  /** The database clock (see StoreClock): a poll's schedule is on it. */
  now(): number;
  /** One try of `fn`; its signal fires on `timeout`, cancellation or a lost lease. */
  attempt<T>(
    fn: (ctx: StepContext) => Promise<T>,
    ctx: { idempotencyKey: string; attempt: number; traceparent?: string },
    timeout?: PollOptions<T>['timeout'],
  ): Promise<T>;
  /** Throws when the run was cancelled or passed its deadline: no new work starts. */
  checkLive(): void;
  /** The run was cancelled or passed its deadline. */
  stopped(): boolean;
  /** A completed poll's compensation. */
  remember<T>(seq: Seq, name: string, output: T, undo: PollOptions<T>['compensate']): void;
  /** The poll's work is left running at the service: its cancel runs with the compensations. */
  leftRunning(seq: Seq, name: string, cancel: NonNullable<PollOptions<unknown>['cancel']>): void;
  /** A request of the poll ended, as journaled (`poll:attempt`). */
  polled?(report: PollReport): void;
}

/** How one request of a poll ended, as `poll:attempt` reports it. */
export type PollReport = Omit<EngineEventMap['poll:attempt'], 'runId' | 'workflow'>;

/** A poll's schedule in ms, its defaults the brief's: first request after 500 ms, then 1 s × 1.5 each time, at most 5 s, for 60 s. */
export interface PollSchedule {
  initialDelay: number;
  interval: number;
  factor: number;
  maxInterval: number;
  maxWait: number;
}

export function pollSchedule(name: string, options: PollOptions<unknown>): PollSchedule {
  const at = (field: string) => `poll(${name}).${field}`;
  const schedule = {
    initialDelay: toMs(options.initialDelay ?? 500, at('initialDelay')),
    interval: toMs(options.interval ?? 1000, at('interval')),
    factor: options.factor ?? 1.5,
    maxInterval: toMs(options.maxInterval ?? 5000, at('maxInterval')),
    maxWait: toMs(options.maxWait ?? 60_000, at('maxWait')),
  };
  if (!(Number.isFinite(schedule.factor) && schedule.factor >= 1 && schedule.factor <= 10))
    throw new ValidationError(at('factor'), `must be a number from 1 to 10 (got ${options.factor})`);
  if (schedule.interval <= 0) throw new ValidationError(at('interval'), 'must be more than 0');
  if (typeof options.until !== 'function') throw new ValidationError(at('until'), 'must be a function');
  const { cancel } = options;
  if (cancel !== undefined && typeof cancel !== 'function') {
    if (typeof cancel?.send !== 'function') throw new ValidationError(at('cancel.send'), 'must be a function');
    if (typeof cancel.until?.poll !== 'function')
      throw new ValidationError(at('cancel.until.poll'), 'must be a function');
    pollSchedule(`${name}.cancel.until`, cancel.until as PollOptions<unknown>);
  }
  return schedule;
}

/** The wait after the n-th request (n ≥ 1). */
export function pollDelay(schedule: PollSchedule, n: number): number {
  return Math.min(schedule.maxInterval, schedule.interval * schedule.factor ** (n - 1));
}

/** What a request did to its limits, written in the transaction journaling how it ended. */
interface RateAfter {
  events: NewEvent[];
  also?: (tx: Store) => Promise<void>;
}

interface Attempted {
  attempt: number;
  nextAt: number;
  error?: string;
}

/**
 * One step of a poll in this pass. Journal: `poll.started` (its deadline and first due time),
 * one `poll.attempted` per request that did not end it (the answer or error, and when the next
 * one is due: the durable timer), then `poll.completed`, `poll.failed` or `poll.timed_out`. A crash
 * during a request repeats that request (a GET); a crash during a wait resumes the same wait.
 */
export async function runPoll<T>(
  host: PollHost,
  seq: Seq,
  name: string,
  fn: (ctx: StepContext) => Promise<T>,
  options: PollOptions<T>,
  schedule: PollSchedule,
): Promise<T> {
  const h = host.history;
  const uses = rateUses(options.rateLimit, `step(${name}).rateLimit`);
  const completed = h.find(seq, RUN_EVENT.pollCompleted);
  if (completed) {
    const output = (completed.data as { output: T }).output;
    host.remember(seq, name, output, options.compensate);
    return output;
  }
  const failed = h.find(seq, RUN_EVENT.pollFailed);
  if (failed) throw rebuild(failed.data as FailureData);
  const started = h.find(seq, RUN_EVENT.pollStarted)?.data as { deadline: number; nextAt: number } | undefined;
  if (h.find(seq, RUN_EVENT.pollTimedOut)) {
    if (options.cancel) host.leftRunning(seq, name, options.cancel);
    throw new StepTimedOutError(timedOut(name));
  }
  if (started && options.cancel && host.stopped()) host.leftRunning(seq, name, options.cancel);
  host.checkLive();

  const now = host.now();
  const begun = started ?? { deadline: now + schedule.maxWait, nextAt: now + schedule.initialDelay };
  if (!started) {
    const data = {
      seq,
      name,
      deadline: begun.deadline,
      nextAt: begun.nextAt,
      ...(options.label ? { label: options.label } : {}),
      ...(options.input === undefined ? {} : { input: options.input }),
    };
    await host.write([{ type: RUN_EVENT.pollStarted, data }]);
  }
  const tries = (h.entries.get(seq)?.events ?? [])
    .filter((e) => e.type === RUN_EVENT.pollAttempted)
    .map((e) => e.data as Attempted);
  const dueAt = tries.at(-1)?.nextAt ?? begun.nextAt;
  if (host.now() < dueAt) throw new Suspension(dueAt);

  const attempt = tries.length + 1;
  // what the request did to its limits goes in the transaction journaling how it ended: a charge, or a 429's push
  let after: RateAfter = { events: [] };
  const end = async (type: string, data: object) =>
    host.write([{ type, data: { seq, name, attempt, ...data } }, ...after.events], after.also);
  const report = (outcome: Omit<PollReport, 'step' | 'attempt'>) => host.polled?.({ step: name, attempt, ...outcome });
  const failure = (error: unknown) => ({ error: describeError(error), errorClass: errorClassOf(error) });
  // each request takes the poll's rate limits first: no room, a durable wait for the next slot, as a step's try
  const taken: RateUse[] = uses.length > 0 ? await takeRate(host, seq, name, attempt, uses) : [];
  let answer: T;
  try {
    answer = await host.attempt(fn, { idempotencyKey: `${host.runId}:${name}#${seq}`, attempt }, options.timeout);
    checkOutput(name, answer, host.maxEventBytes);
    after = rateCharged(seq, name, attempt, rateExtra(uses, taken, answer));
  } catch (error) {
    if (error instanceof LeaseLostError) throw error;
    // a 429's Retry-After pushes the next free slot of every limit the request took, as a step's does
    after = { events: [], also: rateDeferral(error, taken, host.now()) };
    if (host.stopped()) {
      if (options.cancel) host.leftRunning(seq, name, options.cancel);
      host.checkLive();
    }
    let errors = 1;
    for (let i = tries.length - 1; i >= 0 && tries[i]!.error !== undefined; i--) errors += 1;
    const delay = retryDelay(error, errors, options.retry);
    if (delay === null) {
      await end(RUN_EVENT.pollFailed, failureData(error));
      report({ outcome: 'failed', ...failure(error) });
      throw error;
    }
    return waitOrTimeOut(host, seq, name, begun.deadline, delay, { ...failureData(error) }, end, options, (r) =>
      report({ ...r, outcome: r.outcome === 'pending' ? 'retrying' : r.outcome, ...failure(error) }),
    );
  }
  let verdict: { done: boolean; failure: string | false };
  try {
    const failure = options.failWhen?.(answer) ?? false;
    verdict = { failure: failure === true ? 'the answer met failWhen' : failure, done: options.until(answer) };
  } catch (error) {
    const terminal = new TerminalError(`poll ${name}: its condition threw: ${(error as Error).message}`);
    await end(RUN_EVENT.pollFailed, failureData(terminal));
    report({ outcome: 'failed', ...failure(terminal) });
    throw terminal;
  }
  if (verdict.failure !== false) {
    const error = new TerminalError(`poll ${name} failed: ${verdict.failure}`);
    await end(RUN_EVENT.pollFailed, { ...failureData(error), output: answer ?? null });
    report({ outcome: 'failed', ...statusOf(answer), ...failure(error) });
    throw error;
  }
  if (verdict.done) {
    await end(RUN_EVENT.pollCompleted, { output: answer ?? null });
    report({ outcome: 'complete', ...statusOf(answer) });
    host.remember(seq, name, answer, options.compensate);
    return answer;
  }
  return waitOrTimeOut(
    host,
    seq,
    name,
    begun.deadline,
    pollDelay(schedule, attempt),
    { output: answer ?? null },
    end,
    options,
    (r) => report({ ...r, ...statusOf(answer) }),
  );
}

/** Journals the request that did not end the poll and the wait after it, or the timeout when the maximum wait is over. */
async function waitOrTimeOut<T>(
  host: PollHost,
  seq: Seq,
  name: string,
  deadline: number,
  delay: number,
  what: object,
  end: (type: string, data: object) => Promise<void>,
  options: PollOptions<T>,
  report: (r: { outcome: 'pending' | 'timed_out'; nextDelayMs?: number }) => void,
): Promise<never> {
  const now = host.now();
  if (now >= deadline) {
    await end(RUN_EVENT.pollTimedOut, what);
    report({ outcome: 'timed_out' });
    if (options.cancel) host.leftRunning(seq, name, options.cancel);
    throw new StepTimedOutError(timedOut(name));
  }
  const nextAt = Math.min(now + delay, deadline);
  await end(RUN_EVENT.pollAttempted, { ...what, nextAt });
  report({ outcome: 'pending', nextDelayMs: nextAt - now });
  throw new Suspension(nextAt);
}

/** The extra units a request really used (`rateLimit.charge`), journaled and charged with how it ended. */
function rateCharged(seq: Seq, name: string, attempt: number, extra: RateUse[]): RateAfter {
  if (extra.length === 0) return { events: [] };
  return {
    events: [{ type: RUN_EVENT.stepRateCharged, data: { seq, name, attempt, charged: extra } }],
    also: async (tx) => {
      for (const e of extra) await tx.rateCharge(e);
    },
  };
}

/** What a poll's answer says of the work, for its `poll:attempt`: a `status` in its body (an http_request's answer) or on it. */
function statusOf(answer: unknown): { status?: string } {
  const on = (value: unknown) => (value as { status?: unknown } | null | undefined)?.status;
  const status = [on((answer as { body?: unknown } | null | undefined)?.body), on(answer)].find(
    (s) => typeof s === 'string' || typeof s === 'number',
  );
  return status === undefined ? {} : { status: String(status).slice(0, 64) };
}

function timedOut(name: string): string {
  return `poll ${name}: its maximum wait passed before its condition held`;
}
