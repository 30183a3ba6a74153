import {
  leaseHolderPrefix,
  parseSettings,
  type ProcessesEnded,
  type ProcessInfo,
  type ProcessRegistration,
} from '../processes.js';
import type { Statements } from './connection.js';

interface ProcessRow {
  id: string;
  host: string;
  pid: number;
  pid_start: string | null;
  started_at: number;
  heartbeat_at: number;
  settings: string | null;
}

export function processRegister(s: Statements, now: number, p: ProcessRegistration): void {
  s.get(
    `INSERT INTO processes (id, host, pid, pid_start, started_at, heartbeat_at, settings) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, settings = excluded.settings`,
  ).run(p.id, p.host, p.pid, p.pidStart, now, now, p.settings ? JSON.stringify(p.settings) : null);
}

export function processHeartbeat(s: Statements, now: number, p: { id: string }): boolean {
  return s.get('UPDATE processes SET heartbeat_at = ? WHERE id = ?').run(now, p.id).changes === 1;
}

export function processList(s: Statements): ProcessInfo[] {
  return (s.get('SELECT * FROM processes ORDER BY id').all() as ProcessRow[]).map((row) => ({
    id: row.id,
    host: row.host,
    pid: row.pid,
    pidStart: row.pid_start,
    startedAt: row.started_at,
    heartbeatAt: row.heartbeat_at,
    settings: parseSettings(row.settings),
  }));
}

export function processExpire(
  s: Statements,
  now: number,
  p: { processes: Array<{ id: string; heartbeatAt: number | null }> },
): ProcessesEnded {
  const ended: ProcessesEnded = { processes: [], tasks: 0, subscriptions: 0 };
  // a lease that ended a moment ago: the next expiry sweep or lease attempt takes it
  const past = now - 1;
  for (const { id, heartbeatAt } of p.processes) {
    if (
      s.get('DELETE FROM processes WHERE id = @id AND (@at IS NULL OR heartbeat_at = @at)').run({ id, at: heartbeatAt })
        .changes === 0
    )
      continue;
    ended.processes.push(id);
    const mark = leaseHolderPrefix(id);
    ended.tasks += s
      .get(
        "UPDATE tasks SET lease_expires_at = @past WHERE state = 'running' AND lease_expires_at > @past AND substr(worker_id, 1, length(@mark)) = @mark",
      )
      .run({ past, mark }).changes;
    ended.subscriptions += s
      .get(
        'UPDATE subscriptions SET lease_expires_at = @past WHERE lease_expires_at > @past AND substr(owner, 1, length(@mark)) = @mark',
      )
      .run({ past, mark }).changes;
  }
  return ended;
}
