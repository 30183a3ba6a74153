import { describeError, NonDeterminismError, ValidationError } from '../../errors.js';
import type { Journal } from '../../journal/journal.js';
import type { RunOutcome } from '../../observe/events.js';
import type { EnqueueResult } from '../../queue/queue.js';
import type { TaskContext } from '../../queue/handler.js';
import type { Store, Task } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import { PausedWorkflows } from '../operate/pauses.js';
import { claimsOf, holdsAll } from '../start/limits.js';
import { keyLocks } from '../start/line.js';
import { versionTag } from '../start/versions.js';
import { isPartial, type Workflow } from '../workflow.js';
import { blobBytes, type Blobs } from './blobs.js';
import { carriedUsage, type UsageTotals } from './budget.js';
import type { ReplayCache } from './cache.js';
import type { CancelWatch } from './cancel-watch.js';
import { StoreClock } from './clock.js';
import { generationOf, carryOver } from './generations.js';
import { History, runStream } from './history.js';
import { observePass, whoCancelled, type Observe } from './observe.js';
import { Pass, PassAborted, type Children } from './pass.js';

/** What a pass needs of the runtime it drives: the registered code and the run's queueing. */
export interface PassRuntime {
  /** The code a pass of `history` runs, if this process has it. */
  workflowOf(history: History): Workflow | undefined;
  /** Whether this process has version tag `tag` (`name@version`). */
  registered(tag: string): boolean;
  /** In the transaction that ends a run: the next of its ordering key starts, a waiting parent wakes. */
  ended(tx: Store, history: History, id: string): Promise<void>;
  /** Schedules the run's next pass at `at`, or moves its waiting pass earlier. */
  wake(tx: Store, id: string, at: number): Promise<void>;
  /** Queues a pass of run `id` at `at` (null: now), tagged with its version, at its priority. */
  enqueuePass(tx: Store, id: string, at: number | null, knownTag?: string, priority?: number): Promise<EnqueueResult>;
}

export interface PassDriverOptions {
  leaseMs: number;
  maxEventBytes: number;
  pollMs: number;
  observe?: Observe;
  maxValueBytes?: number;
}

/**
 * Drives one pass of a run: reads its history (from the replay cache when it can), runs its code
 * in a `Pass` and writes how the pass came out: the run suspended, continued as new, completed,
 * failed or cancelled (with compensations). The runtime's RUN_QUEUE handler calls `run`.
 *
 * @example const ended = await driver.run(runId, ctx, watch);
 */
export class PassDriver {
  /** The passes running in this process, by run id: a waiter here need not read after their own writes. */
  readonly passes = new Map<string, Pass>();
  private readonly paused: PausedWorkflows;
  private readonly clock: StoreClock; // the database's, which the passes' timers run on

  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    private readonly runtime: PassRuntime,
    private readonly parts: { blobs: Blobs; cache: ReplayCache; children: Children },
    private readonly options: PassDriverOptions,
  ) {
    this.paused = new PausedWorkflows(store, options.pollMs);
    this.clock = new StoreClock(store);
  }

  /** One pass of run `id` under task `ctx`: true when it ended the run (its waiters take the view its commit kept). */
  async run(id: string, ctx: TaskContext, watch: CancelWatch): Promise<boolean> {
    const { from, history } = await this.history(id, ctx.task);
    if (history.terminal || history.version === 0) return false;
    // a run waiting for a slot (its ordering key's turn, a concurrency limit) is not run, even when a signal wakes it
    const claims = claimsOf(history.flow, history.orderingKey);
    if (claims.length > 0 && !history.cancelRequested && !(await holdsAll(this.store, id, claims, this.journal)))
      return false;
    const wf = this.runtime.workflowOf(history);
    if (!wf) {
      // a pass enqueued without its run's tag (before versions): hand it to a worker that has the version
      if (history.codeVersion !== null)
        await this.store.transaction((tx) =>
          this.runtime.enqueuePass(
            tx,
            id,
            null,
            versionTag(history.workflow, history.codeVersion!),
            history.flow?.priority,
          ),
        );
      else throw new Error(`workflow '${history.workflow}' is not registered in this process`);
      return false;
    }
    const lease = { id: ctx.task.id, leaseToken: ctx.task.leaseToken! };
    await this.clock.ready();
    const seen = observePass(this.options.observe, id, history, history.started ?? undefined);
    const maxEventBytes = this.options.maxValueBytes ?? this.options.maxEventBytes;
    const key = history.pauseKey;
    const held = () => this.paused.has(wf.name) || (key !== null && this.paused.has(key));
    const pass = new Pass({
      store: this.store,
      journal: this.journal,
      runId: id,
      lease,
      ...this.options,
      maxEventBytes,
      history,
      children: this.parts.children,
      blobs: this.parts.blobs,
      held,
      clock: this.clock,
      ...(seen.traceparent ? { traceparent: seen.traceparent } : {}),
    });
    const release = await this.paused.hold();
    const end = (tx: Store) => this.runtime.ended(tx, history, id);
    const locks = keyLocks(claimsOf(history.flow, history.orderingKey));
    watch.start(history.version, pass);
    let result: RunOutcome | 'suspended' | 'aborted' = 'aborted';
    let by: 'user' | 'system' | undefined;
    this.passes.set(id, pass);
    try {
      const outcome = await pass.execute(wf);
      // a run that waits will be back: keep its history (one that ended or continued as new will not need it)
      // its weight: an event each, and one per KiB of big values it holds whole
      if (outcome.kind === 'suspended')
        this.parts.cache.put(id, from, history, history.version - from + 1 + Math.ceil(history.blobBytes / 1024));
      if (outcome.kind === 'continued') {
        await pass.write(
          [
            {
              type: RUN_EVENT.runContinued,
              data: this.nextGeneration(history, outcome.input, outcome.workflow ?? wf, pass.usage),
            },
          ],
          (tx) => this.continued(tx, id, from, outcome.workflow),
        );
        return false;
      }
      if (outcome.kind === 'suspended') {
        await pass.flush();
        if (outcome.wakeAt !== null) await this.store.transaction((tx) => this.runtime.wake(tx, id, outcome.wakeAt!));
        result = 'suspended';
        return false;
      }
      if (outcome.kind === 'completed') {
        const data = isPartial(outcome.output)
          ? { output: outcome.output.output ?? null, partial: true }
          : { output: outcome.output ?? null };
        await pass.write([{ type: RUN_EVENT.runCompleted, data }], end, locks);
        result = isPartial(outcome.output) ? 'partial' : 'success';
        return true;
      }
      // the journal could not be written (the run was lost, the database failed): try the pass again
      if (outcome.error instanceof PassAborted) throw outcome.error.cause;
      const undone = outcome.error instanceof NonDeterminismError ? null : await pass.compensate();
      if (undone?.wakeAt != null) {
        // a cancel awaits the service's confirmation: the run ends once it is confirmed (or given up on), not now
        await pass.flush();
        await this.store.transaction((tx) => this.runtime.wake(tx, id, undone.wakeAt!));
        result = 'suspended';
        return false;
      }
      const compensations = undone && { ran: undone.ran, failed: undone.failed };
      if (pass.isCancelled) await pass.write([{ type: RUN_EVENT.runCancelled, data: { compensations } }], end, locks);
      else
        await pass.write(
          [{ type: RUN_EVENT.runFailed, data: { error: describeError(outcome.error), compensations } }],
          end,
          locks,
        );
      result = pass.isCancelled ? 'cancelled' : 'failed';
      if (pass.isCancelled && this.options.observe) by = await whoCancelled(this.journal, id, history);
      return true;
    } finally {
      release();
      if (this.passes.get(id) === pass) this.passes.delete(id);
      seen.end(result, by);
    }
  }

  /**
   * The run's history in its current generation, and the version that starts at: what the cache holds of it (alone
   * if `current` for `task`) and the events after that (a generation begun meanwhile, by `run.continued`, starts over
   * at that event), or all of it from where its generation starts.
   */
  private async history(id: string, task: Task): Promise<{ from: number; history: History }> {
    const cached = this.parts.cache.take(id);
    if (cached && cached.current === task) return cached;
    let from = cached ? cached.from : (await generationOf(this.store, id)).from;
    let stored = await this.journal.readStream(runStream(id), {
      fromVersion: cached ? cached.history.version + 1 : from,
      limit: 1_000_000,
    });
    let history = cached?.history ?? new History([]);
    let next = stored.length - 1;
    while (next >= 0 && stored[next]!.type !== RUN_EVENT.runContinued) next -= 1;
    if (next >= 0) {
      [from, stored, history] = [stored[next]!.version, stored.slice(next), new History([])];
    }
    for (const event of await this.parts.blobs.resolveEvents(stored)) history.add(event);
    history.blobBytes += blobBytes(stored);
    return { from, history };
  }

  /** The first event of the run's next generation: what run.started says, with the new input (and version). */
  private nextGeneration(history: History, input: unknown, wf: Workflow, usage: UsageTotals): Record<string, unknown> {
    const traceparent = (history.started?.data as { traceparent?: string } | undefined)?.traceparent;
    const pauseKey = wf.pauseKey?.(input);
    return {
      generation: history.generation + 1,
      workflow: wf.name,
      version: wf.version,
      input,
      orderingKey: history.orderingKey,
      deadline: history.deadline,
      parent: history.parent,
      ...(history.flow ? { flow: history.flow } : {}),
      ...(pauseKey ? { pauseKey } : {}),
      ...(traceparent ? { traceparent } : {}),
      ...carriedUsage(history, usage),
    };
  }

  /** In the transaction of `run.continued`: carries signals over, moves the run's start, checks its new version, and queues its next pass. */
  private async continued(tx: Store, id: string, from: number, next: Workflow | null): Promise<void> {
    await carryOver(tx, this.journal, id, from);
    if (next) {
      if (!this.runtime.registered(versionTag(next.name, next.version)))
        throw new ValidationError(
          'continueAsNew.workflow',
          `'${next.name}' (version '${next.version}') is not registered with this engine`,
        );
    }
    await this.runtime.wake(tx, id, await tx.now());
  }
}
