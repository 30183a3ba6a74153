import { ConflictError, ValidationError } from '../../errors.js';
import type { Journal } from '../../journal/journal.js';
import { checkName } from '../../json.js';
import type { TaskQueue } from '../../queue/queue.js';
import type { ProjectionMatch } from '../../storage/projections.js';
import type {
  ParkedEvent,
  ParkedStatus,
  Pause,
  PauseKind,
  QueueStats,
  Store,
  StoredEvent,
  StoreStatus,
  Subscription,
  SubscriptionStats,
  Task,
  TaskState,
} from '../../storage/store.js';
import type { ProcessInfo } from '../../storage/processes.js';

/** The shapes the operator's reads answer with, for the faces (which never import `storage/`). */
export type {
  ParkedEvent,
  ParkedStatus,
  Pause,
  PauseKind,
  ProcessInfo,
  QueueStats,
  StoreStatus,
  Subscription,
  SubscriptionStats,
  Task,
  TaskState,
};
import type { Runtime } from '../runtime.js';
import { isTerminal, RUN_VIEW, type RunStatus, type RunView } from '../read/view.js';

/**
 * What an operator does to many things at once: pause and resume a workflow (no pass of its runs
 * is claimed: what runs now finishes, no new step starts) or a queue (none of its tasks is
 * claimed), and cancel, retry or redrive everything a filter matches. Every action is an event of
 * the stream `operator` saying who did it and why, in the transaction of what it changed (a bulk
 * action: one event, written after the items, listing them).
 */
export const OPERATOR_STREAM = 'operator';

/** Who acts and why: both journaled. */
export interface Actor {
  by: string;
  reason: string;
}

export interface RunFilter {
  status?: RunStatus[];
  workflow?: string;
  /** Exclusive bounds on the run's creation time (ms). */
  createdAfter?: number;
  createdBefore?: number;
}

export interface TaskFilter {
  queue?: string;
  /** Exclusive bounds on when the task died (its last change, ms). */
  updatedAfter?: number;
  updatedBefore?: number;
}

export interface BulkResult {
  action: string;
  /** What matched the filter and was acted on (all of them, or what would be with `dryRun`). */
  ids: string[];
  /** Matched but left alone, with why (a run that ended meanwhile). */
  skipped: Array<{ id: string; why: string }>;
  dryRun: boolean;
}

/** The most items one bulk action touches: past it, narrow the filter or repeat. */
export const BULK_LIMIT = 10_000;

/**
 * How a feature retries the runs of one of its workflows, when its own record says whether they
 * failed and its own operation retries them (an agent run: its session's run ends `success` having
 * journaled the agent's failure, and its retry is its event's redrive).
 */
export interface RetryRoute {
  /** The runs of the workflow the feature counts as failed and would retry, created within the bounds (ms, exclusive). */
  failed(bounds: { createdAfter?: number; createdBefore?: number }): Promise<string[]>;
  /** Retries run `id` (failed by its own record, or failed or cancelled as a run): the new run's id. A ConflictError: skipped. */
  retry(id: string, actor: Actor): Promise<string>;
}

export class Operator {
  private readonly retries = new Map<string, RetryRoute>();

  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    private readonly queue: TaskQueue,
    private readonly runtime: Runtime,
  ) {}

  /** Pauses a workflow or a queue. Pausing again changes nothing (the first pause, with its who and why, stays). */
  async pause(kind: PauseKind, name: string, actor: Actor): Promise<{ paused: boolean }> {
    checkKind(kind);
    checkName('name', name);
    const who = checkActor(actor);
    return this.store.transaction(async (tx) => {
      const paused = await tx.pauseSet({ kind, name, pausedBy: who.by, reason: who.reason });
      if (paused) await this.record(tx, { action: `${kind}.paused`, name, ...who });
      return { paused };
    });
  }

  async resume(kind: PauseKind, name: string, actor: Actor): Promise<{ resumed: boolean }> {
    checkKind(kind);
    checkName('name', name);
    const who = checkActor(actor);
    return this.store.transaction(async (tx) => {
      const resumed = await tx.pauseDelete({ kind, name });
      if (resumed) await this.record(tx, { action: `${kind}.resumed`, name, ...who });
      return { resumed };
    });
  }

  pauses(): Promise<Pause[]> {
    return this.store.pauseList();
  }

  /** The store's health: dialect, location, schema version, event and task counts. */
  status(): Promise<StoreStatus> {
    return this.store.status();
  }

  /** Each queue's tasks by state, and its oldest waiting task's age. */
  queueStats(): Promise<QueueStats[]> {
    return this.store.taskStats();
  }

  /** Each subscription's cursor, lag and parked events. */
  subscriptionStats(): Promise<SubscriptionStats[]> {
    return this.store.subscriptionStats();
  }

  subscriptions(): Promise<Subscription[]> {
    return this.store.subscriptionList();
  }

  /** Events a subscription gave up on (or that block an ordered one). */
  parked(subscription: string, status?: ParkedStatus): Promise<ParkedEvent[]> {
    return this.store.parkedList({ subscription, ...(status ? { status } : {}) });
  }

  /** Asks the subscription to deliver a parked event again, or gives up on it for good. */
  setParked(subscription: string, position: number, status: 'retry' | 'skipped'): Promise<ParkedEvent> {
    return this.store.parkedSetStatus({ subscription, position, status });
  }

  /** The processes of this database (their heartbeats and what they run). */
  processes(): Promise<ProcessInfo[]> {
    return this.store.processList();
  }

  task(id: string): Promise<Task> {
    return this.store.taskGet({ id });
  }

  tasks(q: { queue?: string; state?: TaskState; limit: number; afterId?: string }): Promise<Task[]> {
    return this.store.taskList(q);
  }

  /** The database's clock (ms). */
  now(): Promise<number> {
    return this.store.now();
  }

  /** Cancels every run the filter matches that has not ended. */
  async cancelRuns(filter: RunFilter, actor: Actor, options: { dryRun?: boolean } = {}): Promise<BulkResult> {
    const who = checkActor(actor);
    const runs = (await this.matchingRuns(filter)).filter((r) => !isTerminal(r.status));
    const result: BulkResult = { action: 'runs.cancelled', ids: [], skipped: [], dryRun: options.dryRun ?? false };
    for (const run of runs) {
      if (result.dryRun) {
        result.ids.push(run.id);
        continue;
      }
      try {
        await this.runtime.cancel(run.id, `cancelled by ${who.by}: ${who.reason}`);
        result.ids.push(run.id);
      } catch (error) {
        if (!(error instanceof ConflictError)) throw error;
        result.skipped.push({ id: run.id, why: 'it ended meanwhile' });
      }
    }
    if (!result.dryRun)
      await this.record(this.store, {
        action: result.action,
        filter,
        ...who,
        ids: result.ids,
        count: result.ids.length,
      });
    return result;
  }

  /** The runs of `workflow` are retried by `route` (which also says which of them failed), not started again as runs. */
  retryThrough(workflow: string, route: RetryRoute): void {
    this.retries.set(workflow, route);
  }

  /**
   * Starts each failed or cancelled run the filter matches again: a new run of the same version and input, linked to
   * it; a run of a workflow with a retry route (an agent run) is retried by its route, which also names its failed runs.
   */
  async retryRuns(
    filter: RunFilter,
    actor: Actor,
    options: { dryRun?: boolean } = {},
  ): Promise<BulkResult & { started: Record<string, string> }> {
    const who = checkActor(actor);
    const status = filter.status ?? ['failed', 'cancelled'];
    const runs = (await this.matchingRuns({ ...filter, status }))
      .filter((r) => r.status === 'failed' || r.status === 'cancelled')
      .map((r) => ({ id: r.id, route: this.retries.get(r.workflow) }));
    const matched = new Set(runs.map((r) => r.id));
    for (const [workflow, route] of this.retries) {
      if (!status.includes('failed') || (filter.workflow !== undefined && filter.workflow !== workflow)) continue;
      const bounds = { createdAfter: filter.createdAfter, createdBefore: filter.createdBefore };
      for (const id of await route.failed(bounds)) {
        if (matched.has(id)) continue;
        matched.add(id);
        runs.push({ id, route });
      }
      if (runs.length > BULK_LIMIT)
        throw new ValidationError('filter', `matches more than ${BULK_LIMIT} runs: narrow it`);
    }
    const result = {
      action: 'runs.retried',
      ids: [] as string[],
      skipped: [] as BulkResult['skipped'],
      dryRun: options.dryRun ?? false,
      started: {} as Record<string, string>,
    };
    for (const { id, route } of runs) {
      try {
        if (!result.dryRun) result.started[id] = await (route ? route.retry(id, who) : this.runtime.restart(id, who));
        result.ids.push(id);
      } catch (error) {
        if (!(error instanceof ConflictError)) throw error;
        result.skipped.push({ id, why: error.message });
      }
    }
    if (!result.dryRun)
      await this.record(this.store, {
        action: result.action,
        filter,
        ...who,
        ids: result.ids,
        started: result.started,
        count: result.ids.length,
      });
    return result;
  }

  /** Puts every dead task the filter matches back in its queue with fresh attempts (a dead pass of a run: the run goes on). */
  async redriveTasks(filter: TaskFilter, actor: Actor, options: { dryRun?: boolean } = {}): Promise<BulkResult> {
    const who = checkActor(actor);
    const tasks = await this.deadTasks(filter);
    const result: BulkResult = { action: 'tasks.redriven', ids: [], skipped: [], dryRun: options.dryRun ?? false };
    for (const task of tasks) {
      if (result.dryRun) {
        result.ids.push(task.id);
        continue;
      }
      const { redriven } = await this.queue.redrive(task.id);
      if (redriven) result.ids.push(task.id);
      else result.skipped.push({ id: task.id, why: 'it is no longer dead' });
    }
    if (!result.dryRun)
      await this.record(this.store, {
        action: result.action,
        filter,
        ...who,
        ids: result.ids,
        count: result.ids.length,
      });
    return result;
  }

  /** The operator actions journaled, newest first. */
  async actions(limit = 100): Promise<StoredEvent[]> {
    return this.journal.readStream(OPERATOR_STREAM, { limit, backwards: true });
  }

  private async matchingRuns(filter: RunFilter): Promise<RunView[]> {
    if (filter.workflow !== undefined) checkName('workflow', filter.workflow);
    const where: ProjectionMatch[][] = [];
    if (filter.status?.length) where.push([{ field: 'status', in: filter.status }]);
    if (filter.workflow !== undefined) where.push([{ field: 'workflow', in: [filter.workflow] }]);
    const runs: RunView[] = [];
    let before: { createdAt: number; key: string } | undefined;
    for (;;) {
      const rows = await this.store.projectionListRecent({
        name: RUN_VIEW,
        limit: 500,
        where,
        ...(filter.createdAfter !== undefined ? { createdAfter: filter.createdAfter } : {}),
        ...(filter.createdBefore !== undefined ? { createdBefore: filter.createdBefore } : {}),
        ...(before ? { before } : {}),
      });
      for (const row of rows) runs.push(row.value as RunView);
      if (runs.length > BULK_LIMIT)
        throw new ValidationError(
          'filter',
          `matches more than ${BULK_LIMIT} runs: narrow it (status, workflow, created_after, created_before)`,
        );
      if (rows.length < 500) return runs;
      const last = rows.at(-1)!;
      before = { createdAt: (last.value as RunView).createdAt, key: last.key };
    }
  }

  private async deadTasks(filter: TaskFilter): Promise<Task[]> {
    const tasks: Task[] = [];
    let afterId: string | undefined;
    for (;;) {
      const page = await this.store.taskList({
        state: 'dead',
        limit: 500,
        ...(filter.queue ? { queue: filter.queue } : {}),
        ...(afterId ? { afterId } : {}),
      });
      for (const t of page) {
        if (filter.updatedAfter !== undefined && !(t.updatedAt > filter.updatedAfter)) continue;
        if (filter.updatedBefore !== undefined && !(t.updatedAt < filter.updatedBefore)) continue;
        tasks.push(t);
      }
      if (tasks.length > BULK_LIMIT)
        throw new ValidationError(
          'filter',
          `matches more than ${BULK_LIMIT} dead tasks: narrow it (queue, dead_after, dead_before)`,
        );
      if (page.length < 500) return tasks;
      afterId = page.at(-1)!.id;
    }
  }

  private async record(tx: Store, data: Record<string, unknown>): Promise<void> {
    const ids = data.ids as string[] | undefined;
    // the event keeps the first 1000 ids; count says how many there were
    const capped = ids && ids.length > 1000 ? { ...data, ids: ids.slice(0, 1000), truncated: true } : data;
    await this.journal.append(OPERATOR_STREAM, [{ type: 'operator.action', data: capped }], { tx });
  }

  /** Which database this is, without a query: for health checks, which poll (`status()` counts rows). */
  dialect(): 'sqlite' | 'postgres' {
    return this.store.dialect;
  }
}

function checkKind(kind: string): void {
  if (kind !== 'workflow' && kind !== 'queue')
    throw new ValidationError('kind', `must be 'workflow' or 'queue' (got ${JSON.stringify(kind)})`);
}

function checkActor(actor: Actor): Actor {
  const by = typeof actor.by === 'string' ? actor.by.trim() : '';
  if (by === '' || by.length > 200) throw new ValidationError('by', 'must say who acts: 1–200 characters');
  const reason = typeof actor.reason === 'string' ? actor.reason.trim() : '';
  if (reason === '' || reason.length > 2000) throw new ValidationError('reason', 'must say why: 1–2000 characters');
  return { by, reason };
}
