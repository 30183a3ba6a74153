import {
  type AuditListParams,
  type AuditRow,
  auditEntry,
  auditWhere,
  type AuditEntry,
  type NewAuditEntry,
} from '../store-audit.js';
import type { Statements } from './connection.js';

const COLUMNS = 'at, actor, issued_to, method, route, target, address, outcome, detail';

export function auditAppend(s: Statements, now: number, p: NewAuditEntry): void {
  s.get(`INSERT INTO audit (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
    now,
    p.actor,
    p.issuedTo,
    p.method,
    p.route,
    p.target,
    p.address,
    p.outcome,
    p.detail,
  );
}

export function auditList(s: Statements, p: AuditListParams): AuditEntry[] {
  const where = auditWhere(p, () => '?');
  const rows = s.get(`SELECT * FROM audit ${where.sql} ORDER BY seq DESC LIMIT ?`).all(...where.values, p.limit);
  return (rows as AuditRow[]).map(auditEntry);
}

export function auditPrune(s: Statements, p: { before: number; limit: number }): number {
  return s
    .get('DELETE FROM audit WHERE seq IN (SELECT seq FROM audit WHERE at < ? ORDER BY seq LIMIT ?)')
    .run(p.before, p.limit).changes;
}
