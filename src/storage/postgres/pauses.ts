import type { Pause, PauseKind } from '../store.js';
import type { Db } from './connection.js';

export async function pauseSet(
  db: Db,
  p: { kind: PauseKind; name: string; pausedBy: string; reason: string },
): Promise<boolean> {
  const rows = await db.rows(
    'INSERT INTO pauses (kind, name, paused_by, reason) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING name',
    [p.kind, p.name, p.pausedBy, p.reason],
  );
  return rows.length === 1;
}

export async function pauseDelete(db: Db, p: { kind: PauseKind; name: string }): Promise<boolean> {
  return (
    (await db.rows('DELETE FROM pauses WHERE kind = $1 AND name = $2 RETURNING name', [p.kind, p.name])).length === 1
  );
}

export async function pauseList(db: Db): Promise<Pause[]> {
  const rows = await db.rows<{ kind: PauseKind; name: string; paused_by: string; reason: string; created_at: number }>(
    'SELECT * FROM pauses ORDER BY kind, name',
  );
  return rows.map((r) => ({
    kind: r.kind,
    name: r.name,
    pausedBy: r.paused_by,
    reason: r.reason,
    createdAt: r.created_at,
  }));
}
