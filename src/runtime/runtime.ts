import { CancelledError, ConflictError, LeaseLostError, NonDeterminismError, NotFoundError, ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import type { Journal } from '../journal/journal.js';
import { Wakeup } from '../journal/wakeup.js';
import { checkName } from '../json.js';
import type { TaskQueue } from '../queue/queue.js';
import type { TaskContext } from '../queue/worker.js';
import type { Store } from '../storage/store.js';
import { History, runStream } from './history.js';
import { describe, Pass } from './pass.js';
import { isTerminal, projectRunViews, readRunView, type RunView } from './view.js';
import type { Workflow } from './workflow.js';

/** The queue whose tasks drive runs: each task is one pass; the run id is its ordering key, so passes of a run never overlap. */
export const RUN_QUEUE = 'runledger.runs';

export interface RunHandle<O = unknown> {
  readonly id: string;
  /** Waits for the run to end: its output, or the error it failed with (`CancelledError` when cancelled). */
  result(options?: { pollMs?: number }): Promise<O>;
  view(): Promise<RunView>;
}

/**
 * Durable workflow runs on the journal and the task queue. A run is the stream `run:<id>`; every
 * `ctx` call of its code is journaled there, so a pass after any crash replays to where it was.
 *
 * @example
 * const runtime = new Runtime(store, journal, queue, [onboard], { leaseMs: 30_000 });
 * const run = await runtime.start(onboard, { userId: 'u1' }, { id: 'onboard-u1' });
 * await run.result();
 */
export class Runtime {
  private readonly workflows = new Map<string, Workflow>();

  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    private readonly queue: TaskQueue,
    workflows: Workflow[],
    private readonly options: { leaseMs: number },
  ) {
    for (const wf of workflows) {
      if (this.workflows.has(wf.name)) throw new ValidationError('workflows', `two workflows are named '${wf.name}'`);
      this.workflows.set(wf.name, wf);
    }
    projectRunViews(journal);
  }

  /** Starts a run. An id that exists returns the existing run's handle and starts nothing. */
  async start<I, O>(wf: Workflow<I, O>, input: I, options: { id?: string } = {}): Promise<RunHandle<O>> {
    if (!this.workflows.has(wf.name)) throw new ValidationError('workflow', `'${wf.name}' is not registered with this engine`);
    const id = options.id === undefined ? newId('run') : checkName('id', options.id, 200);
    try {
      await this.store.transaction(async (tx) => {
        await this.journal.append(runStream(id), [{ type: 'run.started', data: { workflow: wf.name, input: input ?? null } }], { tx, expectedVersion: 0 });
        await this.queue.enqueue(RUN_QUEUE, { runId: id }, { tx, orderingKey: id });
      });
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
    }
    return this.handle<O>(id);
  }

  handle<O = unknown>(id: string): RunHandle<O> {
    return { id, result: (options) => this.result<O>(id, options?.pollMs), view: () => this.view(id) };
  }

  async view(id: string): Promise<RunView> {
    const view = await readRunView(this.store, id);
    if (!view) throw new NotFoundError(`run ${id} not found`);
    return view;
  }

  /** Sends signal `name` to a run; a repeated idempotency key is ignored. Consumed by one `waitForEvent`. */
  async signal(id: string, name: string, payload: unknown, options: { idempotencyKey?: string } = {}): Promise<void> {
    checkName('name', name);
    await this.view(id);
    await this.store.transaction(async (tx) => {
      const key = options.idempotencyKey === undefined ? undefined : `signal:${id}:${checkName('idempotencyKey', options.idempotencyKey)}`;
      const appended = await this.journal.append(runStream(id), [{ type: 'signal.sent', data: { name, payload: payload ?? null } }], { tx, ...(key ? { idempotencyKey: key } : {}) });
      if (!appended.duplicate) await this.wake(tx, id, await tx.now());
    });
  }

  /** Cancels a run: its running step's signal fires, no new step starts, compensations run. A finished run → ConflictError. */
  async cancel(id: string, reason = 'cancelled'): Promise<void> {
    const view = await this.view(id);
    if (isTerminal(view.status)) throw new ConflictError(`run ${id} has already ${view.status}`);
    await this.store.transaction(async (tx) => {
      await this.journal.append(runStream(id), [{ type: 'run.cancel_requested', data: { reason } }], { tx });
      await this.wake(tx, id, await tx.now());
    });
  }

  /** The task handler of RUN_QUEUE: one pass of one run. */
  readonly execute = async (payload: { runId: string }, ctx: TaskContext): Promise<unknown> => {
    const id = payload.runId;
    const history = new History(await this.journal.readStream(runStream(id), { limit: 1_000_000 }));
    if (history.terminal || history.version === 0) return null;
    const wf = this.workflows.get(history.workflow);
    if (!wf) throw new Error(`workflow '${history.workflow}' is not registered in this process`);
    const pass = new Pass({ store: this.store, journal: this.journal, runId: id, lease: { id: ctx.task.id, leaseToken: ctx.task.leaseToken! }, leaseMs: this.options.leaseMs, history });
    const stopWatching = await this.watchCancel(id, history.version, pass);
    try {
      const outcome = await pass.execute(wf);
      if (outcome.kind === 'suspended') {
        if (outcome.wakeAt !== null) await this.store.transaction((tx) => this.wake(tx, id, outcome.wakeAt!));
        return null;
      }
      if (outcome.kind === 'completed') {
        await pass.write([{ type: 'run.completed', data: { output: outcome.output ?? null } }]);
        return null;
      }
      if (outcome.error instanceof LeaseLostError) throw outcome.error;
      const compensations = outcome.error instanceof NonDeterminismError ? null : await pass.compensate();
      if (pass.isCancelled) await pass.write([{ type: 'run.cancelled', data: { compensations } }]);
      else await pass.write([{ type: 'run.failed', data: { error: describe(outcome.error), compensations } }]);
      return null;
    } finally {
      await stopWatching();
    }
  };

  /** Schedules the run's next pass at `at`, or moves its waiting pass earlier. */
  private async wake(tx: Store, id: string, at: number): Promise<void> {
    const moved = await tx.taskReschedule({ queue: RUN_QUEUE, orderingKey: id, runAt: at });
    if (moved === 0) await this.queue.enqueue(RUN_QUEUE, { runId: id }, { tx, orderingKey: id, runAt: at });
  }

  /** While a pass runs, a cancellation appended by any process reaches it. */
  private async watchCancel(id: string, version: number, pass: Pass): Promise<() => Promise<void>> {
    let seen = version;
    let checking = false;
    return this.store.listen('events', () => {
      if (checking || pass.isCancelled) return;
      checking = true;
      this.journal
        .readStream(runStream(id), { fromVersion: seen + 1 })
        .then((events) => {
          seen = events.at(-1)?.version ?? seen;
          if (events.some((e) => e.type === 'run.cancel_requested')) pass.cancel();
        })
        .catch(() => {})
        .finally(() => (checking = false));
    });
  }

  private async result<O>(id: string, pollMs = 1000): Promise<O> {
    const wakeup = new Wakeup();
    const unlisten = await this.store.listen('events', () => wakeup.wake());
    try {
      for (;;) {
        const view = await this.view(id);
        if (view.status === 'succeeded') return view.output as O;
        if (view.status === 'failed') throw new Error(view.error ?? `run ${id} failed`);
        if (view.status === 'cancelled') throw new CancelledError(`run ${id} was cancelled`);
        await wakeup.wait(pollMs);
      }
    } finally {
      await unlisten();
    }
  }
}
