import { leaseHolderPrefix, type ProcessesEnded, type ProcessInfo } from '../processes.js';
import type { Statements } from './connection.js';

interface ProcessRow {
  id: string;
  host: string;
  pid: number;
  pid_start: string | null;
  started_at: number;
  heartbeat_at: number;
}

export function processRegister(s: Statements, now: number, p: { id: string; host: string; pid: number; pidStart: string | null }): void {
  s.get(
    `INSERT INTO processes (id, host, pid, pid_start, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
  ).run(p.id, p.host, p.pid, p.pidStart, now, now);
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
  }));
}

export function processExpire(s: Statements, now: number, p: { processes: Array<{ id: string; heartbeatAt: number | null }> }): ProcessesEnded {
  const ended: ProcessesEnded = { processes: [], tasks: 0, subscriptions: 0 };
  // a lease that ended a moment ago: the next expiry sweep or lease attempt takes it
  const past = now - 1;
  for (const { id, heartbeatAt } of p.processes) {
    if (s.get('DELETE FROM processes WHERE id = @id AND (@at IS NULL OR heartbeat_at = @at)').run({ id, at: heartbeatAt }).changes === 0) continue;
    ended.processes.push(id);
    const mark = leaseHolderPrefix(id);
    ended.tasks += s.get("UPDATE tasks SET lease_expires_at = @past WHERE state = 'running' AND lease_expires_at > @past AND substr(worker_id, 1, length(@mark)) = @mark").run({ past, mark }).changes;
    ended.subscriptions += s.get('UPDATE subscriptions SET lease_expires_at = @past WHERE lease_expires_at > @past AND substr(owner, 1, length(@mark)) = @mark').run({ past, mark }).changes;
  }
  return ended;
}
