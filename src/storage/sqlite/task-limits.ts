import { ConflictError } from '../../errors.js';
import type { NewEvent } from '../store.js';
import {
  type NewTask,
  type QueueLimit,
  cancelledEvent,
  cancelledReason,
  fairTurn,
  limitFull,
  taskStream,
} from '../tasks.js';
import type { Statements } from './connection.js';

/*
 * The limits of the claim (issue 40): a concurrency key's free slots and a queue's, as SQL the claim
 * (tasks.ts) is built of, and the queues' limits themselves.
 */

// A task of a concurrency key, of the queue's tasks waiting: of the index entries of its key (migration 160).
const KEYED = `FROM tasks o
  WHERE o.queue = @queue AND o.concurrency_key IS NOT NULL AND o.state IN ('ready', 'running')`;

/**
 * The tasks of concurrency keys that are claimable: per key waiting (skipping from key to key on the index), its
 * first due tasks in claim order (`sort_at`: turn, aged priority), as many as its free slots (the limit of its oldest waiting task, less what runs), walked one
 * index probe at a time. Measured, 10,000 tasks waiting under 5 keys: two counts per waiting task instead took
 * 2.7 s for the first claim (each task counting those before it), 22-43 ms for each after.
 */
export const SLOTS = `WITH RECURSIVE
  keys(k) AS (
    SELECT (SELECT o.concurrency_key ${KEYED} AND o.state = 'ready' ORDER BY o.concurrency_key LIMIT 1)
    UNION ALL
    SELECT (SELECT o.concurrency_key ${KEYED} AND o.state = 'ready' AND o.concurrency_key > keys.k
      ORDER BY o.concurrency_key LIMIT 1) FROM keys WHERE keys.k IS NOT NULL),
  free(k, n) AS (
    SELECT k, (SELECT o.concurrency_limit ${KEYED} AND o.state = 'ready' AND o.concurrency_key = keys.k
      ORDER BY o.seq LIMIT 1)
      - (SELECT count(*) ${KEYED} AND o.state = 'running' AND o.concurrency_key = keys.k)
    FROM keys WHERE k IS NOT NULL),
  slots(k, seq, n) AS (
    SELECT k, (SELECT o.seq ${KEYED} AND o.state = 'ready' AND o.concurrency_key = free.k AND o.run_at <= @now
      ORDER BY o.sort_at, o.seq LIMIT 1), n FROM free WHERE n > 0
    UNION ALL
    SELECT k, (SELECT o.seq ${KEYED} AND o.state = 'ready' AND o.concurrency_key = slots.k AND o.run_at <= @now
      AND (o.sort_at, o.seq) > (SELECT p.sort_at, p.seq FROM tasks p WHERE p.seq = slots.seq)
      ORDER BY o.sort_at, o.seq LIMIT 1), n - 1 FROM slots WHERE slots.seq IS NOT NULL AND n > 1)`;

// A queue with a limit: no more than its free slots (a negative LIMIT is none in SQLite, hence max).
export const QUEUE_SLOTS = `CASE WHEN EXISTS (SELECT 1 FROM queue_limits WHERE queue = @queue)
  THEN max(0, min(@limit, (SELECT concurrency FROM queue_limits WHERE queue = @queue)
    - (SELECT count(*) FROM tasks WHERE state = 'running' AND queue = @queue))) ELSE @limit END`;

/** A queue's limit of running tasks (`TaskStore.queueLimitSet`); null removes it. */
export function queueLimitSet(s: Statements, now: number, p: { queue: string; concurrency: number | null }): void {
  if (p.concurrency === null) s.get('DELETE FROM queue_limits WHERE queue = ?').run(p.queue);
  else
    s.get(
      `INSERT INTO queue_limits (queue, concurrency, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (queue) DO UPDATE SET concurrency = excluded.concurrency, updated_at = excluded.updated_at`,
    ).run(p.queue, p.concurrency, now);
}

export function queueLimitList(s: Statements, p: { queue?: string }): QueueLimit[] {
  return s
    .get('SELECT queue, concurrency FROM queue_limits WHERE @queue IS NULL OR queue = @queue ORDER BY queue')
    .all({ queue: p.queue ?? null }) as QueueLimit[];
}

/**
 * What the flow of an enqueue decides for `t` before it is inserted (issue 40): a key that is full (as many of its
 * tasks waiting or running as its limit) refuses it (`drop_newest`) or cancels the key's oldest task in flight, waiting
 * or running (`cancel_in_progress`, its `task.cancelled` returned to journal; a running one's lease ends with it, so
 * its worker's heartbeat and completion find it gone); a task with a fairness group gets its turn (`fair_at`,
 * migration 220): just after its group's last waiting task, never before the queue's first waiting turn.
 */
export function enqueueFlow(
  s: Statements,
  now: number,
  t: NewTask,
  runAt: number,
): { fairAt: number | null; cancelled: Array<{ streamId: string; events: NewEvent[] }> } {
  const cancelled: Array<{ streamId: string; events: NewEvent[] }> = [];
  const c = t.concurrency;
  if (c?.onLimit === 'drop_newest' || c?.onLimit === 'cancel_in_progress') {
    const { n } = s
      .get(`SELECT count(*) AS n FROM tasks WHERE queue = ? AND concurrency_key = ? AND state IN ('ready', 'running')`)
      .get(t.queue, c.key) as { n: number };
    if (n >= c.limit) {
      if (c.onLimit === 'drop_newest') throw new ConflictError(limitFull(c, n));
      const oldest = s
        .get(
          `SELECT id, state, attempts, worker_id, claimed_at FROM tasks
           WHERE queue = ? AND concurrency_key = ? AND state IN ('ready', 'running') ORDER BY seq LIMIT 1`,
        )
        .get(t.queue, c.key) as Oldest | undefined;
      if (oldest) {
        const reason = cancelledReason(t.id, c.key);
        s.get(
          `UPDATE tasks SET state = 'dead', last_error = ?, lease_token = NULL, lease_expires_at = NULL, updated_at = ?
           WHERE id = ?`,
        ).run(reason, now, oldest.id);
        const attempt =
          oldest.state === 'running'
            ? { attempt: oldest.attempts, workerId: oldest.worker_id, claimedAt: oldest.claimed_at }
            : undefined;
        cancelled.push({ streamId: taskStream(oldest.id), events: [cancelledEvent(t.id, reason, attempt)] });
      }
    }
  }
  if (!t.fairBy) return { fairAt: null, cancelled };
  const { last, front } = s
    .get(
      `SELECT (SELECT max(fair_at) FROM tasks WHERE queue = @queue AND fair_group = @group AND fair_group IS NOT NULL AND state = 'ready') AS last,
         (SELECT min(fair_at) FROM tasks WHERE queue = @queue AND fair_group IS NOT NULL AND state = 'ready') AS front`,
    )
    .get({ queue: t.queue, group: t.fairBy }) as { last: number | null; front: number | null };
  return { fairAt: fairTurn(last, front, runAt), cancelled };
}

type Oldest = {
  id: string;
  state: 'ready' | 'running';
  attempts: number;
  worker_id: string | null;
  claimed_at: number | null;
};
