import { toMs } from '../../duration.js';
import { ValidationError } from '../../errors.js';
import { newId } from '../../ids.js';
import type { Journal } from '../../journal/journal.js';
import type { TaskHandler } from '../../queue/handler.js';
import type { Store, StoredEvent } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import { checkBatchAlone, checkFlow, resolveKey } from '../flow-check.js';
import type { Batch } from '../flow.js';
import { runStream } from '../pass/history.js';
import { isTerminal, readRunView, type RunView } from '../read/view.js';
import type { Workflow } from '../workflow.js';
import { release } from './debounce.js';
import { delayStream, within, type DelayedHost } from './delayed.js';
import type { StartOptions } from './start.js';

/** The queue of the batches' timeouts: one task per batch, at its first input's time plus its timeout. */
export const BATCH_QUEUE = 'runledger.batching';

/** The open batch of each batched key (by its stream); none once it is full or its timeout closed it. */
export const BATCHES = 'batching';

/** The first pass of a batch's run is parked here until the batch closes (see debounce.ts, the same shape). */
const PARKED = Date.UTC(9999, 11, 31);

/** A batch still taking inputs: its run, its first input's time, its timeout's due, how many inputs of how many. */
export interface Open {
  runId: string;
  /** ms, by the database's clock */
  first: number;
  due: number;
  size: number;
  max: number;
}

/**
 * The start's batch (the start's own replacing its workflow's), checked; none for a start without one. A batch with a
 * debounce or a throttle (the start's or the workflow's) is refused naming `batch`.
 *
 * @example batchOf(wf, { batch: { maxSize: 100, timeout: '5s' } }) // { maxSize: 100, timeout: '5s' }
 */
export function batchOf(wf: Workflow, options: StartOptions): Batch | null {
  const batch = options.batch ?? wf.flow?.batch;
  if (batch === undefined) return null;
  const checked = checkFlow({ batch }).batch!;
  checkBatchAlone({
    batch: checked,
    debounce: options.debounce ?? wf.flow?.debounce,
    throttle: options.throttle ?? wf.flow?.throttle,
  });
  return checked;
}

/**
 * A batched start: starts of one key (`batch.key` over the input, or one key for the workflow) become one run whose
 * input is the list of their inputs, in the order they took the key's lock. The first start of a batch starts the run
 * with its pass parked, records the batch and enqueues its timer at `timeout` after it; a later start, under the key's
 * lock (the append of `batching.started` to `batching:<wf>:<key>`), appends its input to the run (`run.batched`). The start
 * that fills the batch (`maxSize`) closes it and moves the run's pass to now, in its transaction; the next start opens
 * a new batch. Every start returns the run its input went into. The run shows `waiting`, "batch 3 of 100 — until <iso>".
 *
 * @example const runId = await startBatched(host, ingest, event, {}, { key: 'input.tenant', maxSize: 100, timeout: '5s' })
 */
export async function startBatched(
  host: DelayedHost,
  wf: Workflow,
  input: unknown,
  options: StartOptions,
  batch: Batch,
): Promise<string> {
  if (options.id !== undefined)
    throw new ValidationError('id', "a batched start takes no run id: every start of a batch joins the batch's run");
  const key = batch.key === undefined ? null : resolveKey(batch.key, input, 'batch.key');
  // `batching:`, not `batch:`: a stored workflow's batch of executions (workflows/batches.ts) is `batch:<id>`
  const stream = `batching:${wf.name}:${key ?? '*'}`;
  return within(host.store, options.tx, async (tx) => {
    await host.journal.append(stream, [{ type: RUN_EVENT.batchingStarted, data: {} }], { tx });
    const now = await tx.now();
    const open = (await tx.projectionGet({ name: BATCHES, key: stream })) as Open | undefined;
    // a run cancelled while its batch was open takes no more input: this start opens a new batch
    if (open && !(await ended(tx, open.runId))) {
      const joined: Open = { ...open, size: open.size + 1 };
      const item = batch.into === undefined ? input : (input as Record<string, unknown>)[batch.into];
      const stored = await host.blobs.offload(tx, open.runId, item ?? null);
      await batched(host, tx, joined, { input: stored, ...(batch.into === undefined ? {} : { into: batch.into }) });
      if (joined.size >= joined.max) await closeBatch(host, tx, stream, joined.runId);
      else await tx.projectionPut({ name: BATCHES, key: stream, value: joined });
      await options.also?.(tx);
      return open.runId;
    }
    const opened: Open = {
      runId: newId('run'),
      first: now,
      due: now + toMs(batch.timeout),
      size: 1,
      max: batch.maxSize,
    };
    const full = opened.size >= opened.max;
    await host.begin(tx, wf, firstOf(input, batch.into), {
      ...options,
      id: opened.runId,
      ...(full ? {} : { notBefore: PARKED }),
      also: async (tx) => {
        // the batch's stream, for a signal to find whether the run's batch is still open (inOpenBatch)
        await batched(host, tx, opened, full ? { full: true, key: stream } : { key: stream });
        await options.also?.(tx);
      },
    });
    if (full) return opened.runId;
    await tx.projectionPut({ name: BATCHES, key: stream, value: opened });
    await batchDue(host, tx, stream, opened);
    return opened.runId;
  });
}

/**
 * For a start that joins its key's run (a batch's, a debounce window's), under an idempotency key: takes the lock of
 * the start's batch (window) key in `tx`, the append its start makes first, and returns the run a start of the same
 * idempotency key named first (`runOf` the first event of `keyStream`), if one committed. Under that lock a repeat is
 * seen (on PostgreSQL, once the lock is taken, the next read sees what committed before), so it joins nothing; reading
 * the key without the lock, two starts of one key racing would each add their input. None for a start that joins
 * nothing.
 *
 * @example const first = await joinedBy(engine.journal, tx, wf, input, flow, 'runs:order-7')
 */
export async function joinedBy(
  journal: Journal,
  tx: Store,
  wf: Workflow,
  input: unknown,
  options: StartOptions,
  keyStream: string,
  runOf: (event: StoredEvent) => string | undefined = (e) => (e.data as { run_id?: string }).run_id,
): Promise<string | undefined> {
  const batch = batchOf(wf, options);
  const debounce = batch === null ? (options.debounce ?? wf.flow?.debounce) : undefined;
  if (batch !== null) {
    const key = batch.key === undefined ? null : resolveKey(batch.key, input, 'batch.key');
    await journal.append(`batching:${wf.name}:${key ?? '*'}`, [{ type: RUN_EVENT.batchingStarted, data: {} }], { tx });
  } else if (debounce !== undefined) {
    const key = debounce.key === undefined ? null : resolveKey(debounce.key, input, 'debounce.key');
    await journal.append(delayStream('debounce', wf.name, key), [{ type: RUN_EVENT.debounceStarted, data: {} }], {
      tx,
    });
  } else return undefined;
  const [first] = await journal.readStream(keyStream, { limit: 1, tx });
  return first && runOf(first);
}

/** Whether the key of `stream` has a batch open (retention keeps it then). */
export async function batchLive(tx: Store, stream: string): Promise<boolean> {
  return (await tx.projectionGet({ name: BATCHES, key: stream })) !== undefined;
}

/** The run's input at its batch's first start: the list of one, or the input with its field `into` made one. */
function firstOf(input: unknown, into: string | undefined): unknown {
  if (into === undefined) return [input];
  const base = input as Record<string, unknown>;
  return { ...base, [into]: [base[into] ?? null] };
}

/**
 * Whether run `view` has not begun and its batch is open: a signal sent to it is journaled and kept, not a wake-up
 * (as `inOpenWindow` for a debounce window), so the run begins only once its batch closed, with every input of it; it
 * then sees the signal. The batch's close moves its parked pass to now; a cancel still wakes it.
 *
 * @example if (!(await inOpenBatch(journal, tx, view))) await wake(tx, view.id)
 */
export async function inOpenBatch(journal: Journal, tx: Store, view: RunView): Promise<boolean> {
  if ((view.status !== 'pending' && view.status !== 'waiting') || view.steps.length > 0) return false;
  // the batch's opening is among the run's first events (after its start, and its admission to its limits)
  const first = await journal.readStream(runStream(view.id), { limit: 8, tx });
  const opened = first.find((e) => e.type === RUN_EVENT.runBatched)?.data as { key?: string } | undefined;
  if (opened === undefined) return false;
  // a run from before batches named their stream: its view says whether it waits for its batch
  if (opened.key === undefined) return view.waitingFor?.startsWith('batch ') ?? false;
  const open = (await tx.projectionGet({ name: BATCHES, key: opened.key })) as Open | undefined;
  return open?.runId === view.id;
}

async function ended(tx: Store, runId: string): Promise<boolean> {
  const view = await readRunView(tx, runId);
  return view === undefined || isTerminal(view.status);
}

/**
 * The batch's timeout: the task of BATCH_QUEUE at its due, once per batch.
 *
 * @example await batchDue(engine, tx, 'batching:ingest:acme', open)
 */
export function batchDue(host: Pick<DelayedHost, 'queue'>, tx: Store, stream: string, open: Open): Promise<unknown> {
  return host.queue.enqueue(
    BATCH_QUEUE,
    { stream, runId: open.runId },
    { tx, runAt: open.due, orderingKey: stream, idempotencyKey: `${open.runId}:due` },
  );
}

/**
 * The input's `run.batched`: its place in the batch and, while the batch stays open, why the run waits.
 *
 * @example await batched(engine, tx, open, { key: 'batching:ingest:acme' })
 */
export function batched(
  host: Pick<DelayedHost, 'journal'>,
  tx: Store,
  open: Open,
  data: Record<string, unknown>,
): Promise<unknown> {
  const full = open.size >= open.max;
  const until = new Date(open.due).toISOString();
  const waitingFor = full ? undefined : `batch ${open.size} of ${open.max} — until ${until}`;
  const event = { ...data, size: open.size, max: open.max, until: open.due, ...(waitingFor ? { waitingFor } : {}) };
  return host.journal.append(runStream(open.runId), [{ type: RUN_EVENT.runBatched, data: event }], { tx });
}

/**
 * Closes the batch (a start after this opens a new one) and moves its run's parked pass to now.
 *
 * @example await closeBatch(engine, tx, 'batching:ingest:acme', runId)
 */
export async function closeBatch(
  host: Pick<DelayedHost, 'queue'>,
  tx: Store,
  stream: string,
  runId: string,
): Promise<void> {
  await tx.projectionDelete({ name: BATCHES, key: stream });
  await release(host, tx, stream, runId, RELEASE_FIRST_MS);
}

const RELEASE_FIRST_MS = 1_000;

/**
 * The task handler of BATCH_QUEUE: a batch's timeout. The batch, if still open with this run, is closed under the
 * key's lock and its run's parked pass moved to now, in one transaction; a batch closed already (full, or by a timer
 * run twice) is left alone, so its run starts once. A run whose pass is not queued at the close (it waits for a
 * concurrency slot) is released again by the debounce timer's `release` task.
 *
 * @example engine.work(BATCH_QUEUE, batchTimer(engine), { leaseMs: 30_000 })
 */
export function batchTimer(host: Pick<DelayedHost, 'store' | 'journal' | 'queue'>): TaskHandler {
  return async (payload: { stream: string; runId: string }) => {
    const { stream, runId } = payload;
    await host.store.transaction(async (tx) => {
      const read = async () => {
        const open = (await tx.projectionGet({ name: BATCHES, key: stream })) as Open | undefined;
        return open?.runId === runId ? open : undefined;
      };
      // a batch closed already (full, or by this timer run before) is left alone without taking the key's lock
      if (!(await read())) return;
      await host.journal.append(stream, [{ type: RUN_EVENT.batchingDue, data: { run_id: runId } }], { tx });
      const open = await read();
      if (!open) return;
      const now = await tx.now();
      if (open.due > now) {
        // early by the database's clock: look again at the due
        await host.queue.enqueue(BATCH_QUEUE, payload, {
          tx,
          runAt: open.due,
          orderingKey: stream,
          idempotencyKey: `${runId}:due:${now}`,
        });
        return;
      }
      await closeBatch(host, tx, stream, runId);
    });
    return null;
  };
}
