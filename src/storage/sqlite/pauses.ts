import type { Pause, PauseKind } from '../store.js';
import type { Statements } from './connection.js';

export function pauseSet(
  s: Statements,
  now: number,
  p: { kind: PauseKind; name: string; pausedBy: string; reason: string },
): boolean {
  return (
    s
      .get(
        'INSERT INTO pauses (kind, name, paused_by, reason, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
      )
      .run(p.kind, p.name, p.pausedBy, p.reason, now).changes === 1
  );
}

export function pauseDelete(s: Statements, p: { kind: PauseKind; name: string }): boolean {
  return s.get('DELETE FROM pauses WHERE kind = ? AND name = ?').run(p.kind, p.name).changes === 1;
}

export function pauseList(s: Statements): Pause[] {
  const rows = s.get('SELECT * FROM pauses ORDER BY kind, name').all() as Array<{
    kind: PauseKind;
    name: string;
    paused_by: string;
    reason: string;
    created_at: number;
  }>;
  return rows.map((r) => ({
    kind: r.kind,
    name: r.name,
    pausedBy: r.paused_by,
    reason: r.reason,
    createdAt: r.created_at,
  }));
}
