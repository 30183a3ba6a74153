import type { Journal } from '../../journal/journal.js';
import { toMs, type Duration } from '../../duration.js';
import { ValidationError } from '../../errors.js';
import { checkName } from '../../json.js';
import type { EnqueueOptions, EnqueueResult, TaskQueue, Taker } from '../../queue/queue.js';
import type { Store, StoredEvent, StreamAppend, Task } from '../../storage/store.js';
import { blobBytes, type Blobs } from '../pass/blobs.js';
import type { ReplayCache } from '../pass/cache.js';
import { RUN_EVENT } from '../events.js';
import { History, runStream, type Seq } from '../pass/history.js';
import { resolveMatch, type EventMatch, type Match } from '../match.js';
import type { FlowOptions } from '../flow.js';
import {
  admit,
  claimsOf,
  LimitReachedError,
  noteHolding,
  release,
  takeDroppable,
  type Claim,
  type LimitHost,
} from './limits.js';
import { keyLocks } from './line.js';
import { runFlow, type RunFlow } from './run-flow.js';
import { versionTag } from './versions.js';
import type { Workflow } from '../workflow.js';

export interface StartOptions {
  /** The run's id; starting an existing id returns that run. Default: a new `run_…` id. */
  id?: string;
  /** Runs with the same key run one at a time, in start order. */
  orderingKey?: string;
  /**
   * With `orderingKey`: runs of the key this one waits in front of, if they are still waiting for their turn (a
   * redriven agent event keeps its place in its conversation). Default: behind every run of the key.
   */
  ahead?: readonly string[];
  /** The run fails with a TimeoutError (compensations run) when it has not ended by then. */
  timeout?: Duration;
  /** Starts the run in the caller's transaction: it exists only if that commits. */
  tx?: Store;
  /** The caller's W3C trace context, stored with the run so its spans join the caller's trace (in any process, after any crash). */
  traceparent?: string;
  /** The caller's own writes, in the start's transaction (after the run's first event): they commit with the start or not at all. */
  also?: (tx: Store) => Promise<void>;
  /** Business events that cancel the run (see CancelOn); default: its workflow's. */
  cancelOn?: CancelOn[];
  /** Flow control of this run; each field given replaces its workflow's (see FlowOptions). */
  concurrency?: FlowOptions['concurrency'];
  priority?: FlowOptions['priority'];
  throttle?: FlowOptions['throttle'];
  debounce?: FlowOptions['debounce'];
  batch?: FlowOptions['batch'];
  budget?: FlowOptions['budget'];
  /** The run's first pass is not begun before this time (ms): it waits with status `waiting`. */
  notBefore?: number;
}

/**
 * A business event (`POST /events`, its `detail-type`) that cancels a run, as a user would: with `match`, only one
 * whose field equals the value (`'data.order_id == input.order_id'`, read from the run's input at its start).
 */
export interface CancelOn {
  event: string;
  match?: Match;
}

/** What `run.started` records of `cancelOn`, matches resolved; triggers/ indexes it. */
function cancelOn(
  list: CancelOn[] | undefined,
  input: unknown,
): { cancelOn?: Array<{ event: string; match: EventMatch | null }> } {
  if (!list || list.length === 0) return {};
  if (!Array.isArray(list) || list.length > 10) throw new ValidationError('cancelOn', 'must be a list of at most 10');
  return {
    cancelOn: list.map((c, i) => ({
      event: checkName(`cancelOn[${i}].event`, c.event, 256),
      match: c.match === undefined ? null : resolveMatch(c.match, input, `cancelOn[${i}].match`),
    })),
  };
}

/** The queue whose tasks drive runs: each task is one pass; the run id is its ordering key, so passes of a run never overlap. */
export const RUN_QUEUE = 'runledger.runs';

/**
 * A pass of run `id` as a task: its run id is its ordering key; tagged with the run's version, so that only a worker
 * that has that version runs it. A pass that throws met the infrastructure, not the workflow: it is retried, not sent
 * to the dead letters after 5 tries.
 */
export function passTask(id: string, tag: string | null, priority = 0, pauseKey?: string | null): EnqueueOptions {
  return {
    maxAttempts: 1000,
    orderingKey: id,
    ...(tag ? { tag } : {}),
    ...(priority ? { priority } : {}),
    ...(pauseKey ? { pauseKey } : {}),
  };
}

type Start = StartOptions & { id: string; parent?: { runId: string; seq: Seq } };

/** A start's options, checked: its version tag, ordering key, timeout, flow and first pass's time. */
interface Checked {
  tag: string;
  /** The second name a workflow pause holds it by (`WorkflowOptions.pauseKey`), null: none. */
  pauseKey: string | null;
  orderingKey: string | null;
  timeoutMs: number | null;
  flow: RunFlow;
  notBefore: number | null;
  /** The limits the run takes a slot of, in the one order (`claimsOf`). */
  claims: Claim[];
}

function droppable(claims: Claim[]): Claim[] {
  return claims.filter((c) => c.onLimit === 'drop_newest');
}

function checkNotBefore(value: unknown): number | null {
  if (value === undefined) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw new ValidationError('notBefore', `must be a time in ms since 1970 (got ${JSON.stringify(value)})`);
  return value;
}

interface Host {
  store: Store;
  journal: Journal;
  queue: TaskQueue;
  blobs: Blobs;
  cache: ReplayCache;
  /** The tasks of the passes begun in this process. */
  begun: Set<Task>;
  /** Whether this process runs the workflow version `tag`. */
  registered: (tag: string) => boolean;
  /** Where a run let into its slots begins, and a run cancelled for a newer one wakes. */
  limits: LimitHost;
}

/** Starting runs: a run's `run.started` and its first pass, in a caller's transaction or in the next group commit. */
export class Starts {
  constructor(private readonly host: Host) {}

  /**
   * Starts a run in the next group commit, with the other writes ready: its `run.started` goes in the batch's append,
   * its first pass in the batch's one insert of tasks, claimed as it is inserted by an idle run worker here (no claim
   * statement, no wake-up). A run of an ordering key waits for its turn in the batch's transaction instead.
   */
  async shared(wf: Workflow, input: unknown, options: Start): Promise<void> {
    const { store, journal, queue } = this.host;
    const checked = this.checked(wf, input, options);
    const { tag, timeoutMs, flow, claims } = checked;
    const deadline = timeoutMs === null ? null : (await store.now()) + timeoutMs;
    const priority = flow.priority ?? 0;
    // a first pass not due yet is not claimed as it is inserted: it waits in the queue until `notBefore`
    const taker = options.notBefore === undefined ? queue.reserve(RUN_QUEUE, tag) : null;
    let dropped: string | null = null;
    let admitted = claims.length === 0;
    const pass = queue.newTask(
      RUN_QUEUE,
      { runId: options.id },
      {
        ...passTask(options.id, tag, priority, checked.pauseKey),
        ...(options.notBefore === undefined ? {} : { runAt: options.notBefore }),
        ...(taker ? { claim: taker.claim } : {}),
      },
    );
    try {
      const prepare = async (tx: Store) => {
        // a full drop_newest limit refuses the run before anything of it is written
        dropped = claims.length === 0 ? null : await takeDroppable(this.host.limits, tx, options.id, claims);
        return {
          appends: dropped === null ? [await this.append(tx, wf, input, options, checked, deadline)] : [],
          value: null,
        };
      };
      const also = async (tx: Store) => {
        if (dropped !== null) return null;
        if (claims.length > 0) admitted = await this.admit(tx, options, checked);
        await options.also?.(tx);
        return null;
      };
      // a keyed run let in at once has its first pass inserted with the batch's other tasks, as a plain run's
      const written = await journal.group.submit<null>(
        claims.length === 0
          ? { prepare, enqueue: [pass], ...(options.also ? { also } : {}) }
          : {
              prepare,
              also,
              enqueueAfter: () => (dropped === null && admitted ? [pass] : []),
              locks: keyLocks(claims),
            },
      );
      if (dropped !== null) throw new LimitReachedError(dropped);
      const first = written.tasks[0] ?? null;
      taker?.settle(first ?? undefined);
      this.keep(options.id, written.events[0]!, first);
    } finally {
      taker?.settle();
    }
  }

  /**
   * Starts a run in `tx`. Its first pass is claimed as it is inserted by an idle run worker here,
   * as in `shared`: the worker begins it once `tx` commits, and its slot is free again if `tx`
   * rolls back.
   */
  async in(tx: Store, wf: Workflow, input: unknown, options: Start): Promise<void> {
    const checked = this.checked(wf, input, options);
    const { tag, timeoutMs, claims } = checked;
    const deadline = timeoutMs === null ? null : (await tx.now()) + timeoutMs;
    const limits = this.host.limits;
    const dropped = claims.length === 0 ? null : await takeDroppable(limits, tx, options.id, claims, true);
    if (dropped !== null) throw new LimitReachedError(dropped);
    const first = await this.append(tx, wf, input, options, checked, deadline);
    // a run that exists: the slots its drop_newest limits took are given back (the caller's transaction goes on)
    const [started] = (
      await this.host.journal.appendMany([first], { tx }).catch(async (error) => {
        await release(limits, tx, options.id, droppable(claims));
        throw error;
      })
    ).events;
    const admitted = claims.length === 0 || (await this.admit(tx, options, checked));
    const taker = options.notBefore === undefined ? this.host.queue.reserve(RUN_QUEUE, tag) : null;
    const pass = admitted ? await this.enqueuePass(tx, options.id, checked, taker, options.notBefore) : null;
    await options.also?.(tx);
    tx.onCommit(() => this.keep(options.id, started!, pass));
  }

  /**
   * The started run takes a slot of each of its limits (after its `run.started`, which finds a run that exists):
   * true when it holds them all. One that waits for a concurrency slot says why (`run.admitted`, waitingFor), in the
   * same transaction; one that waits for its ordering key's turn shows pending, as before limits.
   */
  private async admit(tx: Store, options: Start, checked: Checked): Promise<boolean> {
    const runner = {
      id: options.id,
      priority: checked.flow.priority ?? 0,
      tag: checked.tag,
      ...(checked.notBefore === null ? {} : { notBefore: checked.notBefore }),
      ...(options.ahead ? { ahead: options.ahead } : {}),
    };
    const admission = await admit(this.host.limits, tx, runner, checked.claims);
    if (admission.admitted) noteHolding(this.host.journal, tx, options.id);
    if (!admission.admitted && !admission.quiet) {
      const data = { slot: null, waitingFor: admission.waitingFor };
      await this.host.journal.append(runStream(options.id), [{ type: RUN_EVENT.runAdmitted, data }], { tx });
    }
    return admission.admitted;
  }

  private checked(wf: Workflow, input: unknown, options: Start): Checked {
    const tag = versionTag(wf.name, wf.version);
    if (!this.host.registered(tag))
      throw new ValidationError(
        'workflow',
        `'${wf.name}' (version '${wf.version}') is not registered with this engine`,
      );
    const orderingKey = options.orderingKey === undefined ? null : checkName('orderingKey', options.orderingKey, 200);
    const flow = runFlow(wf, input, options);
    const key = wf.pauseKey?.(input);
    return {
      tag,
      pauseKey: key === undefined ? null : checkName('pauseKey', key, 200),
      orderingKey,
      timeoutMs: options.timeout === undefined ? null : toMs(options.timeout, 'timeout'),
      flow,
      notBefore: checkNotBefore(options.notBefore),
      claims: claimsOf(flow, orderingKey),
    };
  }

  /** The run's first event, at version 1 of its new stream (its input offloaded in `tx` if big). */
  private async append(
    tx: Store,
    wf: Workflow,
    input: unknown,
    options: Start,
    checked: Checked,
    deadline: number | null,
  ): Promise<StreamAppend> {
    const { orderingKey, flow, notBefore, pauseKey } = checked;
    const data = {
      workflow: wf.name,
      version: wf.version,
      input: await this.host.blobs.offload(tx, options.id, input ?? null),
      orderingKey,
      deadline,
      parent: options.parent ?? null,
      ...(pauseKey === null ? {} : { pauseKey }),
      ...(Object.keys(flow).length > 0 ? { flow } : {}),
      ...(notBefore === null ? {} : { notBefore, waitingFor: `not before ${new Date(notBefore).toISOString()}` }),
      ...(options.traceparent ? { traceparent: options.traceparent } : {}),
      ...cancelOn(options.cancelOn ?? wf.cancelOn, input),
    };
    return { streamId: runStream(options.id), events: [{ type: RUN_EVENT.runStarted, data }], expectedVersion: 0 };
  }

  private enqueuePass(
    tx: Store,
    id: string,
    checked: Checked,
    taker: Taker | null,
    notBefore: number | undefined,
  ): Promise<EnqueueResult> {
    return this.host.queue.enqueue(
      RUN_QUEUE,
      { runId: id },
      {
        tx,
        ...passTask(id, checked.tag, checked.flow.priority ?? 0, checked.pauseKey),
        ...(notBefore === undefined ? {} : { runAt: notBefore }),
        ...(taker ? { taker } : {}),
      },
    );
  }

  /**
   * A started run's first pass, if it runs here, need not read where its generation starts: it is this one (a copy, as
   * the journal gives it back). Claimed here and begun as it committed (a worker with no free slot left would hold it),
   * its cancel watch listening before anything else could be appended: it reads nothing (`current`).
   */
  private keep(id: string, started: StoredEvent, pass: EnqueueResult | null): void {
    if (blobBytes([started]) > 0) return;
    const current = pass && this.host.begun.has(pass.task) ? pass.task : undefined;
    this.host.cache.put(
      id,
      1,
      new History([{ ...started, data: JSON.parse(JSON.stringify(started.data)) }]),
      1,
      current,
    );
  }
}
