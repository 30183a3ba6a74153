import { describeError, LeaseLostError, TerminalError } from '../../errors.js';
import type { NewEvent, StoredEvent } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import type { Seq } from './history.js';
import type { Compensation } from './compensate.js';
import { pollDelay, pollSchedule, type PollSchedule } from './poll.js';
import type { PollOptions, StepContext } from '../workflow.js';

/** How a poll's cancel is confirmed: its status request, what confirms it, and its schedule (a poll's). */
export interface Confirm {
  poll: (ctx: StepContext) => Promise<unknown>;
  until: (answer: any) => boolean;
  failWhen?: (answer: any) => boolean | string;
  schedule: PollSchedule;
}

/** What confirming a cancel needs of the pass. */
export interface ConfirmHost {
  readonly runId: string;
  write(events: NewEvent[]): Promise<void>;
  /** The database clock: the waits between polls are on it, as a poll's. */
  now(): number;
  /** The `compensation.confirming` and `.polled` events already journaled, by seq. */
  readonly confirming: ReadonlyMap<Seq, StoredEvent[]>;
  readonly signal: AbortSignal;
}

/** The confirmation ended (the compensation is complete) with this, or is due again at `wakeAt` (a durable timer). */
export type Confirmed = { done: { confirmed: boolean; polls: number; unconfirmed?: string } } | { wakeAt: number };

/**
 * One step of the confirmation of cancel `seq` (brief §8.1 "poll cancellation status until confirmed"):
 * `compensation.confirming` (its deadline and first due time) once the cancel was accepted, then one
 * `compensation.polled` per status request that did not confirm it (its answer or error, when the next is
 * due). A request not yet due returns `wakeAt`: the pass ends and the run's next pass takes it from there.
 * A confirmation is never an error: past the maximum wait, a `failWhen` or a TerminalError it is
 * unconfirmed, with the reason.
 */
export async function confirmStep(host: ConfirmHost, seq: Seq, name: string, confirm: Confirm): Promise<Confirmed> {
  const events = host.confirming.get(seq) ?? [];
  const begun = events.find((e) => e.type === RUN_EVENT.compensationConfirming)?.data as
    | { deadline: number; nextAt: number }
    | undefined;
  const polls = events.filter((e) => e.type === RUN_EVENT.compensationPolled).map((e) => e.data as { nextAt: number });
  const { schedule } = confirm;
  if (!begun) {
    const now = host.now();
    const data = { seq, name, deadline: now + schedule.maxWait, nextAt: now + schedule.initialDelay };
    await host.write([{ type: RUN_EVENT.compensationConfirming, data }]);
    return { wakeAt: data.nextAt };
  }
  const dueAt = polls.at(-1)?.nextAt ?? begun.nextAt;
  if (host.now() < dueAt) return { wakeAt: dueAt };
  const poll = polls.length + 1;
  const unconfirmed = (reason: string) => ({ done: { confirmed: false, polls: poll, unconfirmed: reason } });
  let seen: { output: unknown } | { error: string };
  try {
    const answer = await confirm.poll({
      idempotencyKey: `${host.runId}:${name}#${seq}:until`,
      attempt: poll,
      signal: host.signal,
    });
    const failure = confirm.failWhen?.(answer) ?? false;
    if (failure !== false) return unconfirmed(failure === true ? 'the answer met failWhen' : failure);
    if (confirm.until(answer)) return { done: { confirmed: true, polls: poll } };
    seen = { output: answer ?? null };
  } catch (error) {
    if (error instanceof LeaseLostError) throw error;
    if (error instanceof TerminalError) return unconfirmed(describeError(error));
    seen = { error: describeError(error) };
  }
  const now = host.now();
  if (now >= begun.deadline) return unconfirmed(`not confirmed within ${schedule.maxWait / 1000} s (${poll} polls)`);
  const nextAt = Math.min(now + pollDelay(schedule, poll), begun.deadline);
  await host.write([{ type: RUN_EVENT.compensationPolled, data: { seq, name, poll, ...seen, nextAt } }]);
  return { wakeAt: nextAt };
}

/** The compensation that cancels a poll left running: `cancel` sent, then (as `{ send, until }`) confirmed. */
export function cancelCompensation(
  seq: Seq,
  name: string,
  cancel: NonNullable<PollOptions<unknown>['cancel']>,
): Compensation {
  const send = typeof cancel === 'function' ? cancel : cancel.send;
  const compensation: Compensation = {
    seq,
    name: `${name}:cancel`,
    output: null,
    undo: (_, ctx) => send(ctx),
    cancel: true,
  };
  if (typeof cancel === 'function') return compensation;
  const { poll, until, failWhen } = cancel.until;
  const schedule = pollSchedule(`${name}.cancel.until`, cancel.until as PollOptions<unknown>);
  return { ...compensation, confirm: { poll, until, ...(failWhen ? { failWhen } : {}), schedule } };
}
