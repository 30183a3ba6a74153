import { LeaseLostError, NotFoundError } from '../../errors.js';
import type { CompletedTask, Lease, Task, TaskState } from '../store.js';
import { claimOrder, type QueueLimit } from '../tasks.js';
import { jsonArray, prepared, textArray, type Db } from './connection.js';
import { asParsed, toTask, type TaskRow } from '../rows.js';

/** Runs `sql`, which defines CTE `u`, and returns its rows. */
function returning(sql: string): string {
  return `${sql}
  SELECT * FROM u`;
}

/** The database clock, read once per statement (a CTE `now`). */
export const NOW = 'WITH now AS MATERIALIZED (SELECT rl_now_ms() AS ms)';

const GET = prepared('task_get', 'SELECT * FROM tasks WHERE id = $1');

export async function taskGet(db: Db, p: { id: string }): Promise<Task> {
  const [row] = await db.rows<TaskRow>(GET, [p.id]);
  if (!row) throw new NotFoundError(`task ${p.id} not found`);
  return toTask(row, asParsed);
}

/**
 * See rl_task_claim in 001_init.sql for why a task of an ordering key never runs beside another; 070 adds tags and
 * pauses, 220 concurrency keys, queue limits and aging.
 */
const CLAIM = prepared('task_claim_tagged', 'SELECT * FROM rl_task_claim_tagged($1, $2, $3, $4, $5, $6)');

export async function taskClaim(
  db: Db,
  p: { queue: string; limit: number; leaseMs: number; workerId: string; leaseToken: string; tags?: string[] },
): Promise<Task[]> {
  const rows = await db.rows<TaskRow>(CLAIM, [
    p.queue,
    p.limit,
    p.leaseMs,
    p.workerId,
    p.leaseToken,
    p.tags === undefined ? null : textArray(p.tags),
  ]);
  rows.sort(claimOrder);
  return rows.map((row) => toTask(row, asParsed));
}

const HEARTBEAT = prepared(
  'task_heartbeat',
  `${NOW}
   UPDATE tasks t SET lease_expires_at = (SELECT ms FROM now) + $3, updated_at = (SELECT ms FROM now)
   FROM unnest($1::text[], $2::text[]) AS l(id, token)
   WHERE t.id = l.id AND t.lease_token = l.token AND t.state = 'running' RETURNING t.id`,
);

export async function taskHeartbeat(db: Db, p: { leases: Lease[]; leaseMs: number }): Promise<string[]> {
  if (p.leases.length === 0) return [];
  const rows = await db.rows<{ id: string }>(HEARTBEAT, [
    textArray(p.leases.map((l) => l.id)),
    textArray(p.leases.map((l) => l.leaseToken)),
    p.leaseMs,
  ]);
  const extended = new Set(rows.map((row) => row.id));
  return p.leases.filter((lease) => extended.has(lease.id)).map((lease) => lease.id);
}

const HOLD = prepared('task_hold', 'SELECT rl_task_hold($1::text[], $2::text[])');

/** Raises RL410 (a `LeaseLostError`) unless every lease is held, and locks them: a write, so it travels with the next statement. */
export async function taskHold(db: Db, p: { leases: Lease[] }): Promise<void> {
  if (p.leases.length === 0) return;
  await db.write(HOLD, [textArray(p.leases.map((l) => l.id)), textArray(p.leases.map((l) => l.leaseToken))]);
}

/** Completes and journals each task's `task.completed` (migration 160). */
const COMPLETE = prepared(
  'task_complete',
  'SELECT r_id AS id, r_queue AS queue, r_ordering_key AS ordering_key, r_ord AS ord, r_next AS next FROM rl_task_complete($1::text[], $2::text[], $3::jsonb)',
);

export async function taskComplete(db: Db, p: { items: Array<Lease & { result: unknown }> }): Promise<CompletedTask[]> {
  if (p.items.length === 0) return [];
  const rows = await db.rows<{ id: string; queue: string; ordering_key: string | null; ord: number; next: boolean }>(
    COMPLETE,
    [
      textArray(p.items.map((i) => i.id)),
      textArray(p.items.map((i) => i.leaseToken)),
      jsonArray(p.items.map((i) => JSON.stringify(i.result ?? null))),
    ],
  );
  rows.sort((a, b) => a.ord - b.ord);
  return rows.map((row) => ({ id: row.id, queue: row.queue, orderingKey: row.ordering_key, next: row.next }));
}

/** Completes every task or raises RL410, journaling each completion (migration 160). */
const COMPLETE_ALL = prepared(
  'task_complete_held',
  'SELECT q FROM rl_task_complete_held($1::text[], $2::text[], $3::jsonb) AS q',
);

/**
 * Raises RL410 (a `LeaseLostError`) unless every task was completed: a write, so it travels with
 * the next statement. `unblocked` gets the queues where a task of a completed one's key waits.
 */
export async function taskCompleteAll(
  db: Db,
  p: { items: Array<Lease & { result: unknown }> },
  unblocked: (queues: string[]) => void,
): Promise<void> {
  if (p.items.length === 0) return;
  const params = [
    textArray(p.items.map((i) => i.id)),
    textArray(p.items.map((i) => i.leaseToken)),
    jsonArray(p.items.map((i) => JSON.stringify(i.result ?? null))),
  ];
  await db.write(COMPLETE_ALL, params, (rows) => unblocked((rows as Array<{ q: string }>).map((row) => row.q)));
}

const RELEASE = prepared(
  'task_release',
  `${NOW}
   UPDATE tasks t SET state = 'ready', attempts = t.attempts - 1, lease_token = NULL, lease_expires_at = NULL, updated_at = (SELECT ms FROM now),
     run_at = greatest(t.run_at, coalesce($3::bigint, t.run_at))
   FROM unnest($1::text[], $2::text[]) AS l(id, token)
   WHERE t.id = l.id AND t.lease_token = l.token AND t.state = 'running' RETURNING t.id, t.queue`,
);

export async function taskRelease(
  db: Db,
  p: { leases: Lease[]; runAt?: number },
): Promise<Array<{ id: string; queue: string }>> {
  if (p.leases.length === 0) return [];
  return db.rows<{ id: string; queue: string }>(RELEASE, [
    textArray(p.leases.map((l) => l.id)),
    textArray(p.leases.map((l) => l.leaseToken)),
    p.runAt ?? null,
  ]);
}

// Kept in place (an outage cut the attempt short): the task was running, so it goes back ahead of
// every task waiting in its queue, its turn (`fair_at`, else its run-at) moved just before the
// front's. `front` is only read on that path (a CTE is evaluated when first used).
const FAIL = prepared(
  'task_fail',
  returning(`${NOW},
  front AS (SELECT min(r.sort_at) AS sort_at FROM tasks r
    WHERE r.state = 'ready' AND r.queue = (SELECT queue FROM tasks WHERE id = $3)),
  u AS (
    UPDATE tasks SET state = CASE WHEN $1::bigint IS NULL THEN 'dead' ELSE 'ready' END,
      run_at = CASE WHEN $1::bigint IS NULL THEN run_at
        WHEN NOT $5::boolean THEN (SELECT ms FROM now) + $1::bigint
        WHEN fair_at IS NULL THEN least(run_at, (SELECT sort_at FROM front) + priority::bigint * 10000 - 1)
        ELSE run_at END,
      fair_at = CASE WHEN $1::bigint IS NOT NULL AND $5::boolean AND fair_at IS NOT NULL
        THEN least(fair_at, (SELECT sort_at FROM front) + priority::bigint * 10000 - 1) ELSE fair_at END,
      last_error = $2, lease_token = NULL, lease_expires_at = NULL, updated_at = (SELECT ms FROM now)
    WHERE id = $3 AND lease_token = $4 AND state = 'running' RETURNING *)`),
);

export async function taskFail(
  db: Db,
  p: Lease & { error: string; retryDelayMs: number | null; keepPlace?: boolean },
): Promise<Task> {
  const [row] = await db.rows<TaskRow>(FAIL, [p.retryDelayMs, p.error, p.id, p.leaseToken, p.keepPlace === true]);
  if (!row) {
    await taskGet(db, p);
    throw new LeaseLostError(`task ${p.id}: lease ${p.leaseToken} is no longer held`);
  }
  return toTask(row, asParsed);
}

// SKIP LOCKED: a task a worker is completing right now is not expired under it. A lease extended
// after this statement's snapshot is re-checked on the locked row and left alone.
const EXPIRE = prepared(
  'task_expire',
  returning(`${NOW},
  c AS (
    SELECT id FROM tasks WHERE state = 'running' AND lease_expires_at < (SELECT ms FROM now)
    ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED),
  u AS (
    UPDATE tasks SET state = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'ready' END,
      last_error = 'lease expired (worker ' || coalesce(worker_id, '?') || ')',
      lease_token = NULL, lease_expires_at = NULL, updated_at = (SELECT ms FROM now)
    FROM c WHERE tasks.id = c.id RETURNING tasks.*)`),
);

export async function taskExpire(db: Db, p: { limit: number }): Promise<Task[]> {
  const rows = await db.rows<TaskRow>(EXPIRE, [p.limit]);
  rows.sort((a, b) => a.seq - b.seq);
  return rows.map((row) => toTask(row, asParsed));
}

export async function taskList(
  db: Db,
  p: { queue?: string; state?: TaskState; limit: number; afterId?: string },
): Promise<Task[]> {
  const rows = await db.rows<TaskRow>(
    `SELECT * FROM tasks WHERE ($1::text IS NULL OR queue = $1) AND ($2::text IS NULL OR state = $2) AND ($3::text IS NULL OR id > $3)
     ORDER BY id LIMIT $4`,
    [p.queue ?? null, p.state ?? null, p.afterId ?? null, p.limit],
  );
  return rows.map((row) => toTask(row, asParsed));
}

const REDRIVE = prepared(
  'task_redrive',
  returning(`${NOW},
  u AS (
    UPDATE tasks SET state = 'ready', attempts = 0, run_at = (SELECT ms FROM now), updated_at = (SELECT ms FROM now)
    WHERE id = $1 AND state = 'dead' RETURNING *)`),
);

export async function taskRedrive(db: Db, p: { id: string }): Promise<{ task: Task; redriven: boolean }> {
  const [row] = await db.rows<TaskRow>(REDRIVE, [p.id]);
  return row ? { task: toTask(row, asParsed), redriven: true } : { task: await taskGet(db, p), redriven: false };
}

const RESCHEDULE = prepared(
  'task_reschedule',
  "UPDATE tasks SET run_at = least(run_at, $1) WHERE queue = $2 AND ordering_key = $3 AND state = 'ready' RETURNING id",
);

/** Class id of the advisory locks that serialize reschedules of one ordering key (claims use 1919053 per queue). */
const RESCHEDULE_LOCK = 1919054;

export async function taskReschedule(
  db: Db,
  p: { queue: string; orderingKey: string; runAt: number },
): Promise<number> {
  // Two transactions that both find no ready task would both enqueue one: the lock, held to the
  // end of the caller's transaction, makes the second wait and then see the first one's task.
  if (db.inTransaction)
    await db.rows('SELECT pg_advisory_xact_lock($1, hashtext($2))', [RESCHEDULE_LOCK, `${p.queue} ${p.orderingKey}`]);
  return (await db.rows(RESCHEDULE, [p.runAt, p.queue, p.orderingKey])).length;
}

const DUE_IN = prepared(
  'task_due_in',
  `${NOW} SELECT min(t.run_at) - (SELECT ms FROM now) AS due_in FROM tasks t WHERE t.queue = $1 AND t.state = 'ready' AND t.run_at > (SELECT ms FROM now) - $3::bigint
     AND (t.tag IS NULL OR $2::text[] IS NULL OR t.tag = ANY ($2::text[])) AND rl_task_unpaused(t.queue, t.tag, t.pause_key)`,
);

export async function taskDueIn(
  db: Db,
  p: { queue: string; tags?: string[]; lookbackMs?: number },
): Promise<number | null> {
  const [row] = await db.rows<{ due_in: number | null }>(DUE_IN, [
    p.queue,
    p.tags === undefined ? null : textArray(p.tags),
    p.lookbackMs ?? 0,
  ]);
  return row?.due_in ?? null;
}

/** Each state from its own partial index (migration 120): no scan of the tasks themselves. */
export async function taskCounts(db: Db): Promise<Record<TaskState, number>> {
  const [row] = await db.rows<Record<TaskState, number>>(
    `SELECT (SELECT count(*) FROM tasks WHERE state = 'ready') AS ready, (SELECT count(*) FROM tasks WHERE state = 'running') AS running,
       (SELECT count(*) FROM tasks WHERE state = 'completed') AS completed, (SELECT count(*) FROM tasks WHERE state = 'dead') AS dead`,
  );
  return row!;
}

const LIMIT_SET = prepared(
  'queue_limit_set',
  `INSERT INTO queue_limits (queue, concurrency, updated_at) VALUES ($1, $2, rl_now_ms())
   ON CONFLICT (queue) DO UPDATE SET concurrency = excluded.concurrency, updated_at = excluded.updated_at`,
);
const LIMIT_DELETE = prepared('queue_limit_delete', 'DELETE FROM queue_limits WHERE queue = $1');

/** A queue's limit of running tasks (`TaskStore.queueLimitSet`); null removes it. */
export async function queueLimitSet(db: Db, p: { queue: string; concurrency: number | null }): Promise<void> {
  if (p.concurrency === null) await db.rows(LIMIT_DELETE, [p.queue]);
  else await db.rows(LIMIT_SET, [p.queue, p.concurrency]);
}

export async function queueLimitList(db: Db, p: { queue?: string }): Promise<QueueLimit[]> {
  return db.rows<QueueLimit>(
    'SELECT queue, concurrency FROM queue_limits WHERE $1::text IS NULL OR queue = $1 ORDER BY queue',
    [p.queue ?? null],
  );
}
