import type { QueueStats, StoreDiagnosis, SubscriptionStats, TaskDeleteParams } from '../maintenance.js';
import type { Statements } from './connection.js';

/** Per queue, each state from its own partial index (migration 100): finished tasks are not read. */
export function taskStats(s: Statements, now: number): QueueStats[] {
  const rows = s
    .get(
      `SELECT queue, sum(ready) AS ready, sum(due) AS due, sum(running) AS running, sum(dead) AS dead, min(oldest) AS oldest, sum(expired) AS expired FROM (
         SELECT queue, count(*) AS ready, sum(run_at <= @now) AS due, 0 AS running, 0 AS dead, min(CASE WHEN run_at <= @now THEN run_at END) AS oldest, 0 AS expired
           FROM tasks WHERE state = 'ready' GROUP BY queue
         UNION ALL
         SELECT queue, 0, 0, count(*), 0, NULL, sum(lease_expires_at < @now) FROM tasks WHERE state = 'running' GROUP BY queue
         UNION ALL
         SELECT queue, 0, 0, 0, count(*), NULL, 0 FROM tasks WHERE state = 'dead' GROUP BY queue)
       GROUP BY queue ORDER BY queue`,
    )
    .all({ now }) as Array<{
    queue: string;
    ready: number;
    due: number;
    running: number;
    dead: number;
    oldest: number | null;
    expired: number;
  }>;
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

export function taskListActiveKeys(s: Statements, p: { queue: string; orderingKeys: string[] }): string[] {
  if (p.orderingKeys.length === 0) return [];
  return s
    .get(
      `SELECT DISTINCT ordering_key AS key FROM tasks
       WHERE queue = ? AND ordering_key IN (SELECT value FROM json_each(?)) AND state IN ('ready', 'running')`,
    )
    .all(p.queue, JSON.stringify(p.orderingKeys))
    .map((row) => (row as { key: string }).key);
}

export function taskDelete(s: Statements, p: TaskDeleteParams): string[] {
  const rows = s
    .get(
      `DELETE FROM tasks WHERE seq IN (
         SELECT seq FROM tasks
         WHERE state IN ('completed', 'dead') AND state IN (SELECT value FROM json_each(@states)) AND updated_at < @before
           AND (@queue IS NULL OR queue = @queue) AND (@except IS NULL OR queue <> @except) AND (@keys IS NULL OR ordering_key IN (SELECT value FROM json_each(@keys)))
         ORDER BY updated_at LIMIT @limit)
       RETURNING id`,
    )
    .all({
      states: JSON.stringify(p.states),
      before: p.updatedBefore,
      queue: p.queue ?? null,
      except: p.exceptQueue ?? null,
      keys: p.orderingKeys ? JSON.stringify(p.orderingKeys) : null,
      limit: p.limit,
    });
  return rows.map((row) => (row as { id: string }).id);
}

export function subscriptionStats(s: Statements, now: number): SubscriptionStats[] {
  const rows = s
    .get(
      `SELECT s.name, s.blocked_reason, s.owner, s.lease_expires_at,
         coalesce((SELECT max(position) FROM events), 0) - (CASE WHEN s.cursor = '' THEN 0 ELSE CAST(s.cursor AS INTEGER) END) AS behind,
         (SELECT count(*) FROM parked p WHERE p.subscription = s.name AND p.status = 'parked') AS parked
       FROM subscriptions s ORDER BY s.name`,
    )
    .all() as Array<{
    name: string;
    blocked_reason: string | null;
    owner: string | null;
    lease_expires_at: number | null;
    behind: number;
    parked: number;
  }>;
  return rows.map((r) => ({
    name: r.name,
    behind: Math.max(0, r.behind),
    parked: r.parked,
    blocked: r.blocked_reason !== null,
    leaseExpired: r.owner !== null && r.lease_expires_at !== null && r.lease_expires_at < now,
  }));
}

/** Chunks of 500: SQLite's default limit of host parameters is far above, and json_each takes one. */
export function streamDelete(s: Statements, p: { streamIds: string[] }): { events: number } {
  let events = 0;
  for (let i = 0; i < p.streamIds.length; i += 500) {
    const ids = JSON.stringify(p.streamIds.slice(i, i + 500));
    s.get(
      `DELETE FROM append_keys WHERE key IN (
         SELECT idempotency_key FROM events WHERE stream_id IN (SELECT value FROM json_each(?)) AND idempotency_key IS NOT NULL)`,
    ).run(ids);
    events += s.get('DELETE FROM events WHERE stream_id IN (SELECT value FROM json_each(?))').run(ids).changes;
    s.get('DELETE FROM streams WHERE stream_id IN (SELECT value FROM json_each(?))').run(ids);
  }
  return { events };
}

/** Outside a transaction only: SQLite refuses to vacuum inside one. A file not in incremental mode has nothing to give back this way. */
export function storageVacuum(s: Statements): void {
  // 10,000 pages (40 MB) at most per call: one call is one short hold of the write lock
  s.db.pragma('incremental_vacuum(10000)');
}

export function storageDiagnose(s: Statements): StoreDiagnosis {
  const started = performance.now();
  s.get('SELECT 1').get();
  const latencyMs = performance.now() - started;
  const migrations = (
    s.get('SELECT version FROM schema_migrations ORDER BY version').all() as Array<{ version: number }>
  ).map((r) => r.version);
  const autoVacuum = s.db.pragma('auto_vacuum', { simple: true }) as number;
  return {
    latencyMs,
    clockSkewMs: 0,
    migrations,
    commitsPerSecond: null,
    commitsSource: null,
    autoVacuum,
    vacuum: null,
  };
}

export function eventDeleteBefore(s: Statements, p: { streamId: string; beforeVersion: number }): { events: number } {
  s.get(
    `DELETE FROM append_keys WHERE key IN (
       SELECT idempotency_key FROM events WHERE stream_id = ? AND version < ? AND idempotency_key IS NOT NULL)`,
  ).run(p.streamId, p.beforeVersion);
  return {
    events: s.get('DELETE FROM events WHERE stream_id = ? AND version < ?').run(p.streamId, p.beforeVersion).changes,
  };
}
