import {
  type AuditListParams,
  type AuditRow,
  auditEntry,
  auditWhere,
  type AuditEntry,
  type NewAuditEntry,
} from '../store-audit.js';
import type { Db } from './connection.js';

export async function auditAppend(db: Db, p: NewAuditEntry): Promise<void> {
  await db.rows(
    'INSERT INTO audit (actor, issued_to, method, route, target, address, outcome, detail) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
    [p.actor, p.issuedTo, p.method, p.route, p.target, p.address, p.outcome, p.detail],
  );
}

export async function auditList(db: Db, p: AuditListParams): Promise<AuditEntry[]> {
  const where = auditWhere(p, (i) => `$${i}`);
  const rows = await db.rows<AuditRow>(
    `SELECT * FROM audit ${where.sql} ORDER BY seq DESC LIMIT $${where.values.length + 1}`,
    [...where.values, p.limit],
  );
  return rows.map(auditEntry);
}

export async function auditPrune(db: Db, p: { before: number; limit: number }): Promise<number> {
  const rows = await db.rows(
    'DELETE FROM audit WHERE seq IN (SELECT seq FROM audit WHERE at < $1 ORDER BY seq LIMIT $2) RETURNING seq',
    [p.before, p.limit],
  );
  return rows.length;
}
