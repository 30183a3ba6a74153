import { parseSettings, type ProcessesEnded, type ProcessInfo, type ProcessRegistration } from '../processes.js';
import { numberArray, prepared, textArray, type Db } from './connection.js';

interface ProcessRow {
  id: string;
  host: string;
  pid: number;
  pid_start: string | null;
  started_at: number;
  heartbeat_at: number;
  settings: string | null;
}

const REGISTER = prepared(
  'process_register',
  `INSERT INTO processes (id, host, pid, pid_start, started_at, heartbeat_at, settings) VALUES ($1, $2, $3, $4, rl_now_ms(), rl_now_ms(), $5)
   ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, settings = excluded.settings`,
);

export async function processRegister(db: Db, p: ProcessRegistration): Promise<void> {
  await db.rows(REGISTER, [p.id, p.host, p.pid, p.pidStart, p.settings ? JSON.stringify(p.settings) : null]);
}

const HEARTBEAT = prepared(
  'process_heartbeat',
  'UPDATE processes SET heartbeat_at = rl_now_ms() WHERE id = $1 RETURNING id',
);

export async function processHeartbeat(db: Db, p: { id: string }): Promise<boolean> {
  return (await db.rows(HEARTBEAT, [p.id])).length === 1;
}

export async function processList(db: Db): Promise<ProcessInfo[]> {
  return (await db.rows<ProcessRow>('SELECT * FROM processes ORDER BY id')).map((row) => ({
    id: row.id,
    host: row.host,
    pid: row.pid,
    pidStart: row.pid_start,
    startedAt: row.started_at,
    heartbeatAt: row.heartbeat_at,
    settings: parseSettings(row.settings),
  }));
}

/**
 * One statement: the rows of the processes named go (each only while its heartbeat is the one
 * given), and the leases they hold end a moment ago, so the next expiry sweep (tasks) or lease
 * attempt (subscriptions) of any process takes them. Leases name their process by prefix (`<id>:`).
 */
const EXPIRE = prepared(
  'process_expire',
  `WITH now AS MATERIALIZED (SELECT rl_now_ms() AS ms),
   gone AS (
     DELETE FROM processes p USING unnest($1::text[], $2::bigint[]) AS g(id, at)
     WHERE p.id = g.id AND (g.at IS NULL OR p.heartbeat_at = g.at) RETURNING p.id),
   t AS (
     UPDATE tasks SET lease_expires_at = (SELECT ms FROM now) - 1 FROM gone
     WHERE tasks.state = 'running' AND tasks.lease_expires_at > (SELECT ms FROM now) - 1 AND left(tasks.worker_id, length(gone.id) + 1) = gone.id || ':'
     RETURNING tasks.id),
   s AS (
     UPDATE subscriptions SET lease_expires_at = (SELECT ms FROM now) - 1 FROM gone
     WHERE subscriptions.lease_expires_at > (SELECT ms FROM now) - 1 AND left(subscriptions.owner, length(gone.id) + 1) = gone.id || ':'
     RETURNING subscriptions.name)
   SELECT (SELECT coalesce(array_agg(id), '{}') FROM gone) AS processes, (SELECT count(*) FROM t) AS tasks, (SELECT count(*) FROM s) AS subscriptions`,
);

export async function processExpire(
  db: Db,
  p: { processes: Array<{ id: string; heartbeatAt: number | null }> },
): Promise<ProcessesEnded> {
  if (p.processes.length === 0) return { processes: [], tasks: 0, subscriptions: 0 };
  const [row] = await db.rows<{ processes: string[]; tasks: number; subscriptions: number }>(EXPIRE, [
    textArray(p.processes.map((x) => x.id)),
    numberArray(p.processes.map((x) => x.heartbeatAt)),
  ]);
  return { processes: row!.processes, tasks: Number(row!.tasks), subscriptions: Number(row!.subscriptions) };
}
