import type { NewTask, Task } from '../store.js';
import { jsonArray, numberArray, prepared, textArray, type Db, type Sql } from './connection.js';
import { asParsed, toTask, type TaskRow } from '../rows.js';
import { ConflictError } from '../../errors.js';
import { cancelledReason, insertedTask, limitFull, TASK_CANCELLED, TASK_ENQUEUED } from '../tasks.js';
import { NOW } from './tasks.js';

/**
 * One statement for the whole batch: the task rows, inserted in input order so seq, the arrival
 * order, follows it, and for each task inserted its `task.enqueued` event (`enqueuedEvent`, built
 * here in SQL from the row: its run-at is the database clock's) at version 1 of its new stream
 * `task:<id>`, the events in the tasks' order. A repeated (queue, idempotency key) inserts nothing
 * and journals nothing. The arbiter is left out when no task has a key: speculative insertion
 * costs every row extra work. A task's id is new (`newId`), so is its stream, which has no
 * `streams` row (`isTaskStream`, migration 160): its event is version 1. Only what the database
 * chose comes back.
 */
function enqueueSql(withKeys: boolean, claimed: boolean, keyed = false): string {
  // With concurrency keys ($10 keys, $11 limits): columns of their own, so an enqueue without one is planned as before.
  // With rate limits ($13, `TaskRate` as jsonb, null without one): stored for the worker that runs the task.
  // With pause keys ($14, `NewTask.pauseKey`): a stored workflow's passes, held by a pause of that workflow's id.
  // With fairness groups ($12): the task's turn (`fairTurn` in ../tasks.ts, here for a batch: the group's tasks of the
  // batch take the turns after its first, one each). greatest() passes over a group with nothing waiting (null).
  const c0 = keyed ? 15 : 10;
  const runAt = 'coalesce(i.run_at, now.ms)';
  const fairAt = `CASE WHEN i.grp IS NOT NULL THEN greatest(
      (SELECT max(o.fair_at) FROM tasks o WHERE o.queue = i.queue AND o.fair_group = i.grp AND o.fair_group IS NOT NULL AND o.state = 'ready') + 1,
      coalesce((SELECT min(o.fair_at) + 1 FROM tasks o WHERE o.queue = i.queue AND o.fair_group IS NOT NULL AND o.state = 'ready'
        HAVING min(o.fair_at) < ${runAt}), ${runAt}))
    + row_number() OVER (PARTITION BY i.queue, i.grp ORDER BY i.ord) - 1 END`;
  const limits = keyed
    ? {
        columns: ', concurrency_key, concurrency_limit, fair_group, fair_at, rate_limit, pause_key',
        values: `, i.ckey, i.climit, i.grp, ${fairAt}, nullif(i.rlimit, 'null'::jsonb), i.pkey`,
        rows: ', unnest($10::text[]), unnest($11::int[]), unnest($12::text[]), jsonb_array_elements($13::jsonb), unnest($14::text[])',
        names: ', ckey, climit, grp, rlimit, pkey',
        returning: ', concurrency_key, concurrency_limit, fair_group',
        event: ` || CASE WHEN u.concurrency_key IS NULL THEN '{}'::jsonb
          ELSE jsonb_build_object('concurrency',
            jsonb_build_object('key', u.concurrency_key, 'limit', u.concurrency_limit)) END
          || CASE WHEN u.fair_group IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('fairBy', u.fair_group) END`,
      }
    : { columns: '', values: '', rows: '', names: '', returning: '', event: '' };
  // With claims (`TaskClaim` per task: $10 workers, $11 lease tokens, $12 lease ms, null for a task without one), a task
  // not paused goes in running: a statement of its own, so an enqueue without one is planned as before. The pause check
  // is rl_task_unpaused (migration 070) written out: a SQL function with a subquery is planned anew at every statement
  // that calls it. A task of an ordering key is claimed only while no other of its key waits or runs (see `TaskClaim`),
  // nor after one of its key earlier in the same enqueue (the statement's snapshot does not see that one).
  // OFFSET 0 computes `claimed` once per task: flattened, each CASE ran both probes again (logged: 0.75 → 0.29 ms a call).
  const claim = claimed
    ? {
        columns: ', attempts, lease_token, lease_expires_at, worker_id, claimed_at',
        state: "CASE WHEN c.claimed THEN 'running' ELSE 'ready' END",
        values:
          ', CASE WHEN c.claimed THEN 1 ELSE 0 END, CASE WHEN c.claimed THEN i.token END, CASE WHEN c.claimed THEN now.ms + i.lease_ms END, CASE WHEN c.claimed THEN i.worker END, CASE WHEN c.claimed THEN now.ms END',
        rows: `, unnest($${c0}::text[]), unnest($${c0 + 1}::text[]), unnest($${c0 + 2}::bigint[])`,
        names: ', worker, token, lease_ms',
        // never a task of a concurrency key nor of a queue with a limit: the claim counts those
        join: `CROSS JOIN LATERAL (SELECT i.worker IS NOT NULL ${keyed ? 'AND i.ckey IS NULL' : ''}
      AND NOT EXISTS (SELECT 1 FROM queue_limits l WHERE l.queue = i.queue)
      AND NOT EXISTS (SELECT 1 FROM pauses p WHERE (p.kind = 'queue' AND p.name = i.queue)
        OR (p.kind = 'workflow' AND i.tag IS NOT NULL AND left(i.tag, length(p.name) + 1) = p.name || '@')${
          keyed ? "\n        OR (p.kind = 'workflow' AND i.pkey IS NOT NULL AND p.name = i.pkey)" : ''
        })
      AND (i.okey IS NULL OR NOT EXISTS (SELECT 1 FROM tasks o WHERE o.queue = i.queue AND o.ordering_key = i.okey
        AND o.ordering_key IS NOT NULL AND o.state IN ('ready', 'running'))
        AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $5::text[]) WITH ORDINALITY AS k(queue, okey, ord) WHERE k.queue = i.queue AND k.okey = i.okey AND k.ord < i.ord)) AS claimed OFFSET 0) c`,
      }
    : { columns: '', state: "'ready'", values: '', rows: '', names: '', join: '' };
  return `${NOW},
  u AS (
    INSERT INTO tasks (id, queue, state, payload, idempotency_key, ordering_key, run_at, priority, max_attempts, created_at, updated_at, tag${limits.columns}${claim.columns})
    SELECT i.id, i.queue, ${claim.state}, i.payload, i.idem, i.okey, coalesce(i.run_at, now.ms), i.priority, i.max_attempts, now.ms, now.ms, i.tag${limits.values}${claim.values}
    FROM ROWS FROM (unnest($1::text[]), unnest($2::text[]), jsonb_array_elements($3::jsonb), unnest($4::text[]), unnest($5::text[]),
        unnest($6::bigint[]), unnest($7::int[]), unnest($8::int[]), unnest($9::text[])${limits.rows}${claim.rows})
      WITH ORDINALITY AS i(id, queue, payload, idem, okey, run_at, priority, max_attempts, tag${limits.names}${claim.names}, ord)
    CROSS JOIN now
    ${claim.join}
    ORDER BY i.ord
    ${withKeys ? 'ON CONFLICT (queue, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING' : ''}
    RETURNING seq, id, queue, state, ordering_key, run_at, priority, max_attempts, created_at, lease_expires_at${limits.returning}),
  e AS (
    INSERT INTO events (stream_id, version, type, data, metadata, created_at)
    SELECT 'task:' || u.id, 1, '${TASK_ENQUEUED}',
      jsonb_build_object('queue', u.queue, 'orderingKey', u.ordering_key, 'runAt', u.run_at, 'priority', u.priority, 'maxAttempts', u.max_attempts, 'state', 'ready')${limits.event},
      '{}', u.created_at
    FROM u
    ORDER BY u.seq)
  SELECT id, state, run_at, created_at, lease_expires_at FROM u`;
}

const ENQUEUE = prepared('task_enqueue', enqueueSql(false, false));
const ENQUEUE_WITH_KEYS = prepared('task_enqueue_keys', enqueueSql(true, false));
const ENQUEUE_CLAIMED = prepared('task_enqueue_claimed', enqueueSql(false, true));
const ENQUEUE_CLAIMED_WITH_KEYS = prepared('task_enqueue_claimed_keys', enqueueSql(true, true));
/** With concurrency keys: rare enough to be prepared when used, by the flags of the call. */
const keyedSql = (withKeys: boolean, claimed: boolean): Sql =>
  prepared(
    `task_enqueue_limited${withKeys ? '_keys' : ''}${claimed ? '_claimed' : ''}`,
    enqueueSql(withKeys, claimed, true),
  );

const keyOf = (queue: string, key: string | null) => `${queue}\u0000${key}`;

/** A task whose key's limit acts at the enqueue (`TaskConcurrency.onLimit`). */
const gated = (x: NewTask) =>
  x.concurrency?.onLimit === 'drop_newest' || x.concurrency?.onLimit === 'cancel_in_progress';

/** Whether an enqueue of `tasks` needs a transaction of its own (the store opens one): a gate takes a lock until its commit. */
export const needsTransaction = (tasks: NewTask[]): boolean => tasks.some(gated);

// The queue's claim lock (rl_task_claim_tagged): a gated enqueue counts the key's tasks under it, so two enqueues (and a
// claim) never both see the last free place. Its own statement: the count's snapshot is taken after the lock is held.
const GATE_LOCK = prepared('task_gate_lock', 'SELECT pg_advisory_xact_lock(1919053, hashtext($1))');
const GATE_COUNT = prepared(
  'task_gate_count',
  `SELECT count(*)::int AS n,
     (SELECT row_to_json(e) FROM (SELECT * FROM tasks WHERE queue = $1 AND idempotency_key = $3) e) AS existing
   FROM tasks WHERE queue = $1 AND concurrency_key = $2 AND state IN ('ready', 'running')`,
);
// cancel_in_progress: the running tasks of its keys are locked first, before the queue's lock, waiting for a heartbeat
// or a completion of one to commit: a worker's group commit locks the task it completes, then its claim takes the
// queue's lock, so waiting the other way round, under the queue's lock, could deadlock with it.
const GATE_RUNNING = prepared(
  'task_gate_running',
  `SELECT id FROM tasks WHERE (queue, concurrency_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
     AND concurrency_key IS NOT NULL AND state IN ('ready', 'running') AND state = 'running' ORDER BY seq FOR UPDATE`,
);
// Then the key's oldest task in flight is dead, and says why in its stream. Under the queue's lock it waits for no
// row (SKIP LOCKED): one claimed since the lock above and being completed already is passed over, its slot freeing.
// A running one's lease ends with it (its worker's heartbeat and completion find it gone); its event ends its attempt.
const GATE_CANCEL = prepared(
  'task_gate_cancel',
  `${NOW},
  o AS (SELECT id, state, attempts, worker_id, claimed_at FROM tasks
    WHERE queue = $1 AND concurrency_key = $2 AND state IN ('ready', 'running')
    ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED),
  c AS (UPDATE tasks t SET state = 'dead', last_error = $3, lease_token = NULL, lease_expires_at = NULL,
      updated_at = (SELECT ms FROM now)
    FROM o WHERE t.id = o.id
    RETURNING o.*)
  INSERT INTO events (stream_id, version, type, data, metadata, created_at)
  SELECT 'task:' || c.id, coalesce((SELECT max(e.version) FROM events e WHERE e.stream_id = 'task:' || c.id), 0) + 1,
    '${TASK_CANCELLED}', jsonb_build_object('by', $4::text, 'reason', $3::text, 'state', 'dead')
      || CASE WHEN c.state = 'running' THEN jsonb_build_object('attempt', c.attempts, 'workerId', c.worker_id,
        'claimedAt', c.claimed_at) ELSE '{}'::jsonb END,
    '{}', (SELECT ms FROM now)
  FROM c`,
);

/** Each task in turn, a gated one after its key's check (in the store's transaction: see `needsTransaction`). */
async function enqueueGated(db: Db, tasks: NewTask[]): Promise<Array<{ task: Task; created: boolean }>> {
  const cancelling = tasks.filter((x) => x.concurrency?.onLimit === 'cancel_in_progress');
  if (cancelling.length > 0)
    await db.rows(GATE_RUNNING, [
      textArray(cancelling.map((x) => x.queue)),
      textArray(cancelling.map((x) => x.concurrency!.key)),
    ]);
  const out: Array<{ task: Task; created: boolean }> = [];
  for (const x of tasks) {
    const c = x.concurrency;
    if (c && gated(x)) {
      await db.rows(GATE_LOCK, [x.queue]);
      const [row] = await db.rows<{ n: number; existing: TaskRow | null }>(GATE_COUNT, [
        x.queue,
        c.key,
        x.idempotencyKey,
      ]);
      if (row!.existing) {
        out.push({ task: toTask(row!.existing, asParsed), created: false });
        continue;
      }
      if (row!.n >= c.limit) {
        if (c.onLimit === 'drop_newest') throw new ConflictError(limitFull(c, row!.n));
        await db.rows(GATE_CANCEL, [x.queue, c.key, cancelledReason(x.id, c.key), x.id]);
      }
    }
    out.push(...(await taskEnqueue(db, { tasks: [x] }, true)));
  }
  return out;
}

export async function taskEnqueue(
  db: Db,
  p: { tasks: NewTask[] },
  checked = false,
): Promise<Array<{ task: Task; created: boolean }>> {
  const t = p.tasks;
  if (t.length === 0) return [];
  if (!checked && t.some(gated)) return enqueueGated(db, t);
  const payloads = t.map((x) => JSON.stringify(x.payload ?? null));
  const keys = t.some((x) => x.idempotencyKey !== null);
  const claimed = t.some((x) => x.claim !== undefined);
  const keyed = t.some((x) => x.concurrency || x.fairBy || x.rateLimit || x.pauseKey);
  const sql = keyed
    ? keyedSql(keys, claimed)
    : claimed
      ? keys
        ? ENQUEUE_CLAIMED_WITH_KEYS
        : ENQUEUE_CLAIMED
      : keys
        ? ENQUEUE_WITH_KEYS
        : ENQUEUE;
  const params = (from: number, to: number) => {
    const c = t.slice(from, to);
    return [
      textArray(c.map((x) => x.id)),
      textArray(c.map((x) => x.queue)),
      jsonArray(payloads.slice(from, to)),
      textArray(c.map((x) => x.idempotencyKey)),
      textArray(c.map((x) => x.orderingKey)),
      numberArray(c.map((x) => x.runAt)),
      numberArray(c.map((x) => x.priority)),
      numberArray(c.map((x) => x.maxAttempts)),
      textArray(c.map((x) => x.tag ?? null)),
      ...(keyed
        ? [
            textArray(c.map((x) => x.concurrency?.key ?? null)),
            numberArray(c.map((x) => x.concurrency?.limit ?? null)),
            textArray(c.map((x) => x.fairBy ?? null)),
            jsonArray(c.map((x) => JSON.stringify(x.rateLimit ?? null))),
            textArray(c.map((x) => x.pauseKey ?? null)),
          ]
        : []),
      ...(claimed
        ? [
            textArray(c.map((x) => x.claim?.workerId ?? null)),
            textArray(c.map((x) => x.claim?.leaseToken ?? null)),
            numberArray(c.map((x) => x.claim?.leaseMs ?? null)),
          ]
        : []),
    ];
  };
  const inserted =
    db.inTransaction && t.length >= 2 * PIPELINED
      ? await pipelined(db, sql, t.length, params)
      : await db.rows<Inserted>(sql, params(0, t.length));
  const created = new Map<string, Task>();
  const byKey = new Map<string, Task>();
  const byId = new Map(t.map((x, i) => [x.id, i]));
  for (const row of inserted) {
    const i = byId.get(row.id)!;
    const task = insertedTask(t[i]!, payloads[i]!, {
      state: row.state,
      now: row.created_at,
      runAt: row.run_at,
      leaseExpiresAt: row.lease_expires_at,
    });
    created.set(task.id, task);
    if (task.idempotencyKey !== null) byKey.set(keyOf(task.queue, task.idempotencyKey), task);
  }
  const missing = t.filter((x) => !created.has(x.id) && !byKey.has(keyOf(x.queue, x.idempotencyKey)));
  if (missing.length > 0) {
    // A separate statement: its fresh snapshot sees rows that a concurrent enqueue committed while
    // ON CONFLICT waited for it.
    const existing = await db.rows<TaskRow>(
      'SELECT t.* FROM tasks t JOIN unnest($1::text[], $2::text[]) AS k(queue, key) ON t.queue = k.queue AND t.idempotency_key = k.key',
      [textArray(missing.map((x) => x.queue)), textArray(missing.map((x) => x.idempotencyKey))],
    );
    for (const row of existing) byKey.set(keyOf(row.queue, row.idempotency_key), toTask(row, asParsed));
  }
  return t.map((x) => {
    const task = created.get(x.id);
    if (task) return { task, created: true };
    const existing = byKey.get(keyOf(x.queue, x.idempotencyKey));
    if (!existing) throw new Error(`task ${x.id} was neither inserted nor found by its idempotency key`);
    return { task: existing, created: false };
  });
}

/** Tasks per statement of a pipelined enqueue. */
export const PIPELINED = 1_000;

/**
 * A big enqueue in a transaction as statements of `PIPELINED` tasks, each sent before the last one's
 * answer: the server inserts one while this process builds the next and reads the one before.
 */
async function pipelined(
  db: Db,
  sql: Sql,
  count: number,
  params: (from: number, to: number) => unknown[],
): Promise<Inserted[]> {
  return db.atomic(async (direct) => {
    const sent: Array<Promise<Inserted[]>> = [];
    for (let from = 0; from < count; from += PIPELINED) {
      const rows = direct.rows<Inserted>(sql, params(from, Math.min(count, from + PIPELINED)));
      rows.catch(() => {});
      sent.push(rows);
      // lets the statement leave (a connection's writes go at the end of the turn) before the next is built
      await new Promise((resolve) => setImmediate(resolve));
    }
    return (await Promise.all(sent)).flat();
  });
}

type Inserted = {
  id: string;
  state: 'ready' | 'running';
  run_at: number;
  created_at: number;
  lease_expires_at: number | null;
};
