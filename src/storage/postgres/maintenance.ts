import type { QueueStats, StoreDiagnosis, SubscriptionStats, TaskDeleteParams } from '../maintenance.js';
import { textArray, type Db } from './connection.js';

/** Per queue, each state from its own partial index (migration 120): finished tasks are not read. */
export async function taskStats(db: Db): Promise<QueueStats[]> {
  const rows = await db.rows<{
    queue: string;
    ready: number;
    due: number;
    running: number;
    dead: number;
    oldest: number | null;
    expired: number;
  }>(
    `WITH now AS MATERIALIZED (SELECT rl_now_ms() AS ms)
     SELECT queue, sum(ready)::bigint AS ready, sum(due)::bigint AS due, sum(running)::bigint AS running, sum(dead)::bigint AS dead, min(oldest) AS oldest, sum(expired)::bigint AS expired FROM (
       SELECT queue, count(*) AS ready, count(*) FILTER (WHERE run_at <= now.ms) AS due, 0 AS running, 0 AS dead, min(run_at) FILTER (WHERE run_at <= now.ms) AS oldest, 0 AS expired
         FROM tasks CROSS JOIN now WHERE state = 'ready' GROUP BY queue
       UNION ALL
       SELECT queue, 0, 0, count(*), 0, NULL, count(*) FILTER (WHERE lease_expires_at < now.ms) FROM tasks CROSS JOIN now WHERE state = 'running' GROUP BY queue
       UNION ALL
       SELECT queue, 0, 0, 0, count(*), NULL, 0 FROM tasks WHERE state = 'dead' GROUP BY queue) AS states
     GROUP BY queue ORDER BY queue`,
  );
  return rows.map((r) => ({
    queue: r.queue,
    ready: r.ready,
    due: r.due,
    running: r.running,
    dead: r.dead,
    oldestDueAt: r.oldest,
    expiredLeases: r.expired,
  }));
}

export async function taskListActiveKeys(db: Db, p: { queue: string; orderingKeys: string[] }): Promise<string[]> {
  if (p.orderingKeys.length === 0) return [];
  const rows = await db.rows<{ key: string }>(
    `SELECT DISTINCT ordering_key AS key FROM tasks WHERE queue = $1 AND ordering_key = ANY($2::text[]) AND state IN ('ready', 'running')`,
    [p.queue, textArray(p.orderingKeys)],
  );
  return rows.map((r) => r.key);
}

/** SKIP LOCKED: a row another transaction holds is left for the next batch, so retention never waits on a writer. */
export async function taskDelete(db: Db, p: TaskDeleteParams): Promise<string[]> {
  const rows = await db.rows<{ id: string }>(
    `DELETE FROM tasks WHERE id IN (
       SELECT id FROM tasks
       WHERE state IN ('completed', 'dead') AND state = ANY($1::text[]) AND updated_at < $2 AND ($3::text IS NULL OR queue = $3) AND ($4::text IS NULL OR queue <> $4)
         AND ($5::text[] IS NULL OR ordering_key = ANY($5::text[]))
       ORDER BY updated_at LIMIT $6 FOR UPDATE SKIP LOCKED)
     RETURNING id`,
    [
      textArray(p.states),
      p.updatedBefore,
      p.queue ?? null,
      p.exceptQueue ?? null,
      p.orderingKeys ? textArray(p.orderingKeys) : null,
      p.limit,
    ],
  );
  return rows.map((r) => r.id);
}

export async function subscriptionStats(db: Db): Promise<SubscriptionStats[]> {
  const rows = await db.rows<{ name: string; blocked: boolean; expired: boolean; behind: number; parked: number }>(
    `SELECT s.name, s.blocked_reason IS NOT NULL AS blocked, (s.owner IS NOT NULL AND s.lease_expires_at < rl_now_ms()) AS expired,
       greatest(0, coalesce((SELECT max(position) FROM events), 0) - (CASE WHEN s.cursor = '' THEN 0 ELSE split_part(s.cursor, ':', 2)::bigint END)) AS behind,
       (SELECT count(*) FROM parked p WHERE p.subscription = s.name AND p.status = 'parked') AS parked
     FROM subscriptions s ORDER BY s.name`,
  );
  return rows.map((r) => ({
    name: r.name,
    behind: r.behind,
    parked: r.parked,
    blocked: r.blocked,
    leaseExpired: r.expired,
  }));
}

export async function streamDelete(db: Db, p: { streamIds: string[] }): Promise<{ events: number }> {
  if (p.streamIds.length === 0) return { events: 0 };
  const [row] = await db.rows<{ events: number }>(
    `WITH gone AS (DELETE FROM events WHERE stream_id = ANY($1::text[]) RETURNING idempotency_key),
       keys AS (DELETE FROM append_keys WHERE key IN (SELECT idempotency_key FROM gone WHERE idempotency_key IS NOT NULL)),
       streams AS (DELETE FROM streams WHERE stream_id = ANY($1::text[]))
     SELECT count(*) AS events FROM gone`,
    [textArray(p.streamIds)],
  );
  return { events: row?.events ?? 0 };
}

/**
 * The commit rate of this database over `sampleMs`: from pg_stat_statements when the extension is
 * installed (statements, not transactions, but it sees every database user), else from
 * pg_stat_database's xact_commit, minus the commits of this diagnosis itself.
 */
export async function storageDiagnose(db: Db, p: { sampleMs: number }): Promise<StoreDiagnosis> {
  const sent = Date.now();
  const t0 = performance.now();
  const [clock] = await db.rows<{ now: number }>('SELECT rl_now_ms() AS now');
  const latencyMs = performance.now() - t0;
  const clockSkewMs = clock!.now - (sent + latencyMs / 2);
  const migrations = (await db.rows<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).map(
    (r) => r.version,
  );
  const [ext] = await db.rows<{ present: boolean }>(`SELECT to_regclass('pg_stat_statements') IS NOT NULL AS present`);
  const sample = async (): Promise<number> => {
    if (ext?.present) {
      const [row] = await db.rows<{ n: number }>(
        'SELECT coalesce(sum(calls), 0)::bigint AS n FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())',
      );
      return row!.n;
    }
    // the statistics snapshot is per transaction: clear it so the second read is fresh
    await db.rows('SELECT pg_stat_clear_snapshot()');
    const [row] = await db.rows<{ n: number }>(
      'SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()',
    );
    return row!.n;
  };
  const before = await sample();
  await new Promise((resolve) => setTimeout(resolve, p.sampleMs));
  const after = await sample();
  // our own statements between the two samples (the clear and the read) committed too
  const own = ext?.present ? 1 : 2;
  const commitsPerSecond = Math.max(0, after - before - own) / (p.sampleMs / 1000);
  const [vacuum] = await db.rows<{ autovacuum: boolean; live: number; dead: number }>(
    `SELECT current_setting('autovacuum') = 'on' AS autovacuum, coalesce(sum(n_live_tup), 0)::bigint AS live, coalesce(sum(n_dead_tup), 0)::bigint AS dead
     FROM pg_stat_user_tables WHERE relname IN ('tasks', 'projections', 'streams') AND schemaname = current_schema()`,
  );
  return {
    latencyMs,
    clockSkewMs,
    migrations,
    commitsPerSecond,
    commitsSource: ext?.present ? 'pg_stat_statements' : 'pg_stat_database',
    autoVacuum: null,
    vacuum: vacuum ?? null,
  };
}

/**
 * A plain VACUUM (not FULL): it takes no lock that blocks reads or writes, and SKIP_LOCKED passes
 * over a table another maintenance command holds instead of waiting for it.
 */
export async function storageVacuum(db: Db): Promise<void> {
  await db.rows('VACUUM (SKIP_LOCKED) events, streams, append_keys, projections, tasks');
}

export async function eventDeleteBefore(
  db: Db,
  p: { streamId: string; beforeVersion: number },
): Promise<{ events: number }> {
  const [row] = await db.rows<{ events: number }>(
    `WITH gone AS (DELETE FROM events WHERE stream_id = $1 AND version < $2 RETURNING idempotency_key),
       keys AS (DELETE FROM append_keys WHERE key IN (SELECT idempotency_key FROM gone WHERE idempotency_key IS NOT NULL))
     SELECT count(*) AS events FROM gone`,
    [p.streamId, p.beforeVersion],
  );
  return { events: row?.events ?? 0 };
}
