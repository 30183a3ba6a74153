import { toMs } from '../../duration.js';
import { ValidationError } from '../../errors.js';
import { newId } from '../../ids.js';
import type { Journal } from '../../journal/journal.js';
import type { TaskHandler } from '../../queue/handler.js';
import type { Store } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import { resolveKey } from '../flow-check.js';
import type { Debounce } from '../flow.js';
import { runStream } from '../pass/history.js';
import { isTerminal, readRunView, type RunView } from '../read/view.js';
import type { Workflow } from '../workflow.js';
import { delayStream, within, type DelayedHost } from './delayed.js';
import { RUN_QUEUE, type StartOptions } from './start.js';

/** The queue of the debounce windows' timers: one task per window, enqueued again while its due moves. */
export const DEBOUNCE_QUEUE = 'runledger.debounce';

/** The open window of each debounced key (by its stream); none once its timer closed it. */
export const DEBOUNCE_WINDOWS = 'debounce';

/**
 * The first pass of a debounced run is parked here until its window closes: only the window's timer, under the key's
 * lock, moves it to now, so no pass can read the run's input while a start of its window may still add to it.
 */
export const PARKED = Date.UTC(9999, 11, 31);

export interface Window {
  runId: string;
  /** ms, by the database's clock */
  first: number;
  last: number;
  due: number;
  mode: 'last' | 'all';
}

/**
 * A debounced start: one run per key after `period` with no new start, `maxWait` at most after the window's first.
 * The first start of a window starts the run with its pass parked, records the window and enqueues its timer at
 * `due`; a later start, under the key's lock (the append of `debounce.started` to `debounce:<wf>:<key>`), appends its
 * input to the run (`run.debounced`; the run's code sees the last input, or with `mode: 'all'` the list of them in
 * start order) and moves `due`. Every start of one window returns the window's run id. The run shows `waiting`,
 * "debounced until <iso>".
 *
 * @example const runId = await startDebounced(host, chat, message, {}, { key: 'input.chat', period: '2s' })
 */
export async function startDebounced(
  host: DelayedHost,
  wf: Workflow,
  input: unknown,
  options: StartOptions,
  debounce: Debounce,
): Promise<string> {
  if (options.id !== undefined)
    throw new ValidationError(
      'id',
      "a debounced start takes no run id: every start of a window joins the window's run",
    );
  const key = debounce.key === undefined ? null : resolveKey(debounce.key, input, 'debounce.key');
  const stream = delayStream('debounce', wf.name, key);
  const period = toMs(debounce.period);
  const maxWait = debounce.maxWait === undefined ? Number.POSITIVE_INFINITY : toMs(debounce.maxWait);
  return within(host.store, options.tx, async (tx) => {
    await host.journal.append(stream, [{ type: RUN_EVENT.debounceStarted, data: {} }], { tx });
    const now = await tx.now();
    const open = (await tx.projectionGet({ name: DEBOUNCE_WINDOWS, key: stream })) as Window | undefined;
    // a run cancelled while its window was open takes no more input: this start opens a new window
    if (open && !(await ended(tx, open.runId))) {
      const due = Math.min(now + period, open.first + maxWait);
      const stored = await host.blobs.offload(tx, open.runId, input ?? null);
      await debounced(host, tx, open.runId, { input: stored, mode: open.mode, until: due });
      await tx.projectionPut({
        name: DEBOUNCE_WINDOWS,
        key: stream,
        value: { ...open, last: now, due } satisfies Window,
      });
      await options.also?.(tx);
      return open.runId;
    }
    const window: Window = {
      runId: newId('run'),
      first: now,
      last: now,
      due: Math.min(now + period, now + maxWait),
      mode: debounce.mode ?? 'last',
    };
    await host.begin(tx, wf, window.mode === 'all' ? [input] : input, {
      ...options,
      id: window.runId,
      notBefore: PARKED,
      also: async (tx) => {
        await debounced(host, tx, window.runId, { mode: window.mode, until: window.due, key: stream });
        await options.also?.(tx);
      },
    });
    await tx.projectionPut({ name: DEBOUNCE_WINDOWS, key: stream, value: window });
    await timer(host, tx, stream, window);
    return window.runId;
  });
}

/**
 * Whether debounced key `stream` has a window open (its timer closes it, deleting the row); a key with none is as a
 * key never seen, so its stream may go (retention's `keys`).
 *
 * @example await debounceLive(tx, 'debounce:chat-reply:c-7') // true while the window is open
 */
export async function debounceLive(tx: Store, stream: string): Promise<boolean> {
  return (await tx.projectionGet({ name: DEBOUNCE_WINDOWS, key: stream })) !== undefined;
}

async function ended(tx: Store, runId: string): Promise<boolean> {
  const view = await readRunView(tx, runId);
  return view === undefined || isTerminal(view.status);
}

const WAITING_FOR = 'debounced until ';

/**
 * Whether run `view` has not begun and its debounce window is open: a signal sent to it is journaled and kept, not a
 * wake-up. As with Inngest's debounce (the function's run exists only once the period ended), the run's code begins
 * only once its window closed, so no start of the window is missed; it then sees the signal. Its window's timer moves
 * its parked pass to now; a cancel still wakes it. Reads nothing more for a run that began.
 *
 * @example if (!(await inOpenWindow(journal, tx, view))) await wake(tx, view.id)
 */
export async function inOpenWindow(journal: Journal, tx: Store, view: RunView): Promise<boolean> {
  if ((view.status !== 'pending' && view.status !== 'waiting') || view.steps.length > 0) return false;
  // the window's opening is among the run's first events (after its start, and its admission to its limits)
  const first = await journal.readStream(runStream(view.id), { limit: 8, tx });
  const opened = first.find((e) => e.type === RUN_EVENT.runDebounced)?.data as { key?: string } | undefined;
  // a run from before windows named their key: its view says whether it waits for its window
  if (opened?.key === undefined) return view.waitingFor?.startsWith(WAITING_FOR) ?? false;
  const open = (await tx.projectionGet({ name: DEBOUNCE_WINDOWS, key: opened.key })) as Window | undefined;
  return open?.runId === view.id;
}

function debounced(host: DelayedHost, tx: Store, runId: string, data: Record<string, unknown>): Promise<unknown> {
  const waitingFor = `${WAITING_FOR}${new Date(data.until as number).toISOString()}`;
  return host.journal.append(runStream(runId), [{ type: RUN_EVENT.runDebounced, data: { ...data, waitingFor } }], {
    tx,
  });
}

/** The window's timer at its due; one per (run, due), so a timer run twice enqueues the next one once. */
export function timer(host: Pick<DelayedHost, 'queue'>, tx: Store, stream: string, window: Window): Promise<unknown> {
  return host.queue.enqueue(
    DEBOUNCE_QUEUE,
    { stream, runId: window.runId },
    { tx, runAt: window.due, orderingKey: stream, idempotencyKey: `${window.runId}:${window.due}` },
  );
}

/**
 * The task handler of DEBOUNCE_QUEUE: a window's timer. A window whose due moved on enqueues its timer at the new due
 * (a due only moves later, so that read needs no lock); one that is due is closed under the key's lock (a start after
 * that opens a new window) and its run's parked pass moved to now, in one transaction. A timer of a closed window does
 * nothing: a crash between its commit and the task's end, or a timer run twice, starts the run once. A run whose
 * pass is not queued yet at the close (it waits for a concurrency slot) is released by the timer again (`release`).
 *
 * @example engine.work(DEBOUNCE_QUEUE, debounceTimer(engine), { leaseMs: 30_000 })
 */
export function debounceTimer(host: Pick<DelayedHost, 'store' | 'journal' | 'queue'>): TaskHandler {
  return async (payload: { stream: string; runId: string; release?: number }) => {
    const { stream, runId } = payload;
    if (payload.release !== undefined) {
      await host.store.transaction((tx) => release(host, tx, stream, runId, payload.release!));
      return null;
    }
    await host.store.transaction(async (tx) => {
      const read = async () => {
        const open = (await tx.projectionGet({ name: DEBOUNCE_WINDOWS, key: stream })) as Window | undefined;
        return open?.runId === runId ? open : undefined;
      };
      const seen = await read();
      if (!seen) return;
      if (seen.due > (await tx.now())) return void (await timer(host, tx, stream, seen));
      await host.journal.append(stream, [{ type: RUN_EVENT.debounceDue, data: { run_id: runId } }], { tx });
      const open = await read();
      if (!open) return;
      const now = await tx.now();
      if (open.due > now) return void (await timer(host, tx, stream, open));
      await tx.projectionDelete({ name: DEBOUNCE_WINDOWS, key: stream });
      await release(host, tx, stream, runId, RELEASE_FIRST_MS);
    });
    return null;
  };
}

const RELEASE_FIRST_MS = 1_000;
const RELEASE_MAX_MS = 10_000;

/**
 * Moves the closed window's parked pass to now. With none to move, the run either began (woken early, by a cancel or a
 * signal), ended, or waits for a concurrency slot or its ordering turn, whose grant queues its first pass at the parked
 * time: then it looks again, every 1 s doubling to 10 s, until the run has a pass to move or has begun.
 */
export async function release(
  host: Pick<DelayedHost, 'queue'>,
  tx: Store,
  stream: string,
  runId: string,
  delayMs: number,
): Promise<void> {
  const now = await tx.now();
  if ((await tx.taskReschedule({ queue: RUN_QUEUE, orderingKey: runId, runAt: now })) > 0) return;
  const view = await readRunView(tx, runId);
  if (!view || view.steps.length > 0 || (view.status !== 'pending' && view.status !== 'waiting')) return;
  const next = Math.min(delayMs * 2, RELEASE_MAX_MS);
  await host.queue.enqueue(
    DEBOUNCE_QUEUE,
    { stream, runId, release: next },
    { tx, runAt: now + delayMs, idempotencyKey: `${runId}:release:${now + delayMs}` },
  );
}
