import type { Client, RunRecord, RunSummary, TaskRecord } from '../client/client.js';
import { createEngine, type Engine } from '../engine.js';
import { NotFoundError } from '../errors.js';
import { runStream } from '../runtime/pass/history.js';
import { currentStatus, type RunStatus, type RunView } from '../runtime/read/view.js';
import { runRecord, runSummary, runWhere, runWorkflow, storedNames } from '../server/records/runs.js';
import type { StoredEvent } from '../journal/journal.js';
import type { StoreStatus, Task } from '../runtime/operate/operator.js';
import { workflowDefinitions } from '../app/workflows.js';

/** An event as the timeline prints it, from the API or the database alike. */
export interface TimelineEvent {
  type: string;
  timestamp: number;
  data: Record<string, any>;
}

export interface Subscription {
  name: string;
  cursor: string;
  blocked_reason: string | null;
  parked: number;
}

/**
 * Where the read commands read: a running server (the default) or, with `--database`, the
 * database itself. Both answer in the API's shapes, so a command prints the same either way.
 */
export interface Source {
  status(): Promise<StoreStatus>;
  /** Newest first (by creation time, ties by id descending); `workflow`: a code or stored workflow's name, a stored workflow's id, an agent's name. */
  runs(q: { status?: string[]; workflow?: string; limit: number }): Promise<RunSummary[]>;
  run(id: string): Promise<RunRecord>;
  /** A run's events; with `follow`, live until its last one. */
  timeline(id: string, follow: boolean): AsyncIterable<TimelineEvent>;
  tasks(q: { queue?: string; state?: string; limit: number }): Promise<TaskRecord[]>;
  taskEvents(id: string): Promise<TimelineEvent[]>;
  redrive(id: string): Promise<{ id: string; state: string; redriven: boolean }>;
  subscriptions(): Promise<Subscription[]>;
  /** A stored workflow's name (runs of stored workflows show it rather than `runledger.stored`). */
  workflowName(id: string): Promise<string | undefined>;
  close(): Promise<void>;
}

const event = (e: { type: string; timestamp: string | number; data: unknown }): TimelineEvent => ({
  type: e.type,
  timestamp: typeof e.timestamp === 'number' ? e.timestamp : Date.parse(e.timestamp),
  data: (e.data ?? {}) as Record<string, any>,
});

/** The server's API as a Source. */
export function serverSource(c: Client): Source {
  const names = new Map<string, Promise<string | undefined>>();
  return {
    status: () => c.status(),
    async runs(q) {
      const runs: RunSummary[] = [];
      let last: string | null | undefined;
      do {
        const page = await c.runs({
          limit: Math.min(100, q.limit - runs.length),
          ...(q.status ? { status: q.status.join(',') } : {}),
          ...(q.workflow ? { workflow: q.workflow } : {}),
          ...(last ? { last_key: last } : {}),
        });
        runs.push(...page.runs);
        last = page.last_key;
      } while (last && runs.length < q.limit);
      return runs;
    },
    run: (id) => c.run(id),
    async *timeline(id, follow) {
      if (follow) {
        for await (const e of c.follow(id)) yield event(e);
        return;
      }
      for (let after = 0; ; ) {
        const page = await c.runEvents(id, { after, limit: 1000 });
        for (const e of page.events) yield event(e);
        if (page.next_after === null) return;
        after = page.next_after;
      }
    },
    tasks: async (q) =>
      (
        await c.tasks({
          limit: q.limit,
          ...(q.queue ? { queue: q.queue } : {}),
          ...(q.state ? { state: q.state } : {}),
        })
      ).tasks,
    taskEvents: async (id) => (await c.taskEvents(id)).events.map(event),
    redrive: (id) => c.redrive(id),
    subscriptions: async () =>
      (await c.subscriptions()).subscriptions.map((s) => ({
        name: s.name,
        cursor: s.cursor,
        blocked_reason: s.blocked_reason ?? null,
        parked: s.parked ?? 0,
      })),
    workflowName(id) {
      if (!names.has(id))
        names.set(
          id,
          c.workflow(id).then(
            (w) => w.name,
            () => undefined,
          ),
        );
      return names.get(id)!;
    },
    close: async () => {},
  };
}

/** The database itself as a Source (it must exist: `existingDatabase`). Starts no workers. */
export async function databaseSource(location: string, options: { pollMs?: number } = {}): Promise<Source> {
  const engine = await createEngine({ database: location, workers: false });
  const definitions = workflowDefinitions(engine);
  return {
    status: () => engine.operator.status(),
    async runs(q) {
      // the API's listing, read here: the same filters and order as GET /runs
      const where = runWhere({
        ...(q.status ? { status: q.status.map((s) => currentStatus(s) as RunStatus) } : {}),
        ...(q.workflow !== undefined ? { workflow: await runWorkflow(definitions, q.workflow) } : {}),
      });
      const runs: RunView[] = [];
      let last: string | null = null;
      do {
        const page = await engine.runs.listRecent({
          limit: Math.min(100, q.limit - runs.length),
          where,
          ...(last ? { last_key: last } : {}),
        });
        runs.push(...page.runs);
        last = page.last_key;
      } while (last !== null && runs.length < q.limit);
      const [live, names] = await Promise.all([engine.runs.liveTags(), storedNames(definitions, runs)]);
      return runs.map((v) => runSummary(v, live, names));
    },
    async run(id) {
      const view = await engine.runtime.view(id);
      const [live, names] = await Promise.all([engine.runs.liveTags(), storedNames(definitions, [view])]);
      return runRecord(view, live, names);
    },
    timeline: (id, follow) => databaseTimeline(engine, id, follow, options.pollMs),
    tasks: async (q) =>
      (
        await engine.queue.list({
          limit: q.limit,
          ...(q.queue ? { queue: q.queue } : {}),
          ...(q.state ? { state: q.state as Task['state'] } : {}),
        })
      ).map(taskRecord),
    async taskEvents(id) {
      const events = await engine.queue.history(id);
      if (events.length === 0) throw new NotFoundError(`task ${id} not found`);
      return events.map(event);
    },
    async redrive(id) {
      const { task, redriven } = await engine.queue.redrive(id);
      return { id: task.id, state: task.state, redriven };
    },
    async subscriptions() {
      const subs = await engine.operator.subscriptions();
      return Promise.all(
        subs.map(async (s) => ({
          name: s.name,
          cursor: s.cursor,
          blocked_reason: s.blockedReason,
          parked: (await engine.operator.parked(s.name)).filter((p) => p.status === 'parked').length,
        })),
      );
    },
    workflowName: (id) =>
      definitions.get(id).then(
        (w) => w.name,
        () => undefined,
      ),
    close: () => engine.close(),
  };
}

/**
 * A run's events from the database; with `follow`, until its last. Wakes on the journal's
 * notifications; another process's writes to a SQLite file send none here, so it also looks
 * every `pollMs` (default: 500 ms on SQLite, 5 s on PostgreSQL).
 */
async function* databaseTimeline(
  engine: Engine,
  id: string,
  follow: boolean,
  pollMs?: number,
): AsyncGenerator<TimelineEvent> {
  if (!(await engine.runs.find(id))) throw new NotFoundError(`run ${id} not found`);
  const watch = follow ? await engine.journal.watch((s) => s === runStream(id)) : null;
  const wait = pollMs ?? (engine.operator.dialect() === 'sqlite' ? 500 : 5_000);
  try {
    const tail = engine.runs.tail(id, 0);
    for (;;) {
      const { events, end } = await tail.next();
      for (const e of events) yield event(e as StoredEvent);
      if (end) return;
      if (events.length > 0) continue;
      if (!watch) return;
      await watch.wakeup.wait(wait);
    }
  } finally {
    await watch?.stop();
  }
}

function taskRecord(t: Task): TaskRecord {
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    id: t.id,
    queue: t.queue,
    state: t.state,
    attempts: t.attempts,
    max_attempts: t.maxAttempts,
    last_error: t.lastError,
    payload: t.payload,
    ordering_key: t.orderingKey,
    run_at: iso(t.runAt),
    created_at: iso(t.createdAt),
    updated_at: iso(t.updatedAt),
  };
}

/** The raw journal from the database, oldest first: one stream, the streams of a prefix, or all. */
export async function readJournal(
  location: string,
  q: { stream?: string; prefix?: string; limit: number },
): Promise<StoredEvent[]> {
  const engine = await createEngine({ database: location, workers: false });
  try {
    if (q.stream) return await engine.journal.readStream(q.stream, { limit: q.limit });
    return await engine.journal.readAll({ limit: q.limit, ...(q.prefix ? { streamPrefix: q.prefix } : {}) });
  } finally {
    await engine.close();
  }
}
