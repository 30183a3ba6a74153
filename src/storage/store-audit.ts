/** One privileged request as the audit trail keeps it (never its body). */
export interface AuditEntry {
  seq: number;
  /** When it was answered (ms, database clock). */
  at: number;
  /** The API key's name; null in open mode (no auth configured) and for a request refused before it was known. */
  actor: string | null;
  issuedTo: string | null;
  method: string;
  /** The OpenAPI path of the route (`/runs/{id}/cancel`), or the request's path when no route has it. */
  route: string;
  /** The id the request acted on (the route's first path parameter), if any. */
  target: string | null;
  /** The remote address it came from, if known. */
  address: string | null;
  /** The HTTP status it was answered with. */
  outcome: number;
  /** A short reason for a refused one (its error code and message). */
  detail: string | null;
}

export type NewAuditEntry = Omit<AuditEntry, 'seq' | 'at'>;

/** Filters of a page of the trail, newest first; `before`: a `seq` of the previous page's last row. */
export interface AuditListParams {
  actor?: string;
  route?: string;
  outcome?: number;
  since?: number;
  before?: number;
  limit: number;
}

/** The audit trail's rows: appended once, listed newest first, deleted only by retention. */
export interface AuditStore {
  auditAppend(p: NewAuditEntry): Promise<void>;
  auditList(p: AuditListParams): Promise<AuditEntry[]>;
  /** Deletes up to `limit` rows older than `before` (ms), oldest first: how many went. */
  auditPrune(p: { before: number; limit: number }): Promise<number>;
}

/** The WHERE clauses of a list, in order, each with one value; `mark(i)` writes the i-th placeholder. */
export function auditWhere(p: AuditListParams, mark: (i: number) => string): { sql: string; values: unknown[] } {
  const clauses: string[] = [];
  const values: unknown[] = [];
  const add = (column: string, op: string, value: unknown) => {
    values.push(value);
    clauses.push(`${column} ${op} ${mark(values.length)}`);
  };
  if (p.actor !== undefined) add('actor', '=', p.actor);
  if (p.route !== undefined) add('route', '=', p.route);
  if (p.outcome !== undefined) add('outcome', '=', p.outcome);
  if (p.since !== undefined) add('at', '>=', p.since);
  if (p.before !== undefined) add('seq', '<', p.before);
  return { sql: clauses.length ? `WHERE ${clauses.join(' AND ')}` : '', values };
}

export interface AuditRow {
  seq: number | string;
  at: number | string;
  actor: string | null;
  issued_to: string | null;
  method: string;
  route: string;
  target: string | null;
  address: string | null;
  outcome: number;
  detail: string | null;
}

export const auditEntry = (r: AuditRow): AuditEntry => ({
  seq: Number(r.seq),
  at: Number(r.at),
  actor: r.actor,
  issuedTo: r.issued_to,
  method: r.method,
  route: r.route,
  target: r.target,
  address: r.address,
  outcome: Number(r.outcome),
  detail: r.detail,
});
