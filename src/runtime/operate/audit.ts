import type { AuditEntry, AuditListParams, NewAuditEntry, Store } from '../../storage/store.js';

export type { AuditEntry, AuditListParams, NewAuditEntry } from '../../storage/store.js';

/**
 * The audit trail's door (`engine.audit`): the server writes one row per privileged request and lists them; retention
 * deletes old ones (its `audit` kind). Rows are never changed.
 *
 * @example await engine.audit.list({ actor: 'bootstrap', limit: 50 })
 */
export class AuditTrail {
  constructor(private readonly store: Store) {}

  append(entry: NewAuditEntry): Promise<void> {
    return this.store.auditAppend(entry);
  }

  /** Newest first; `before`: the `seq` of a previous page's last row. */
  list(params: AuditListParams): Promise<AuditEntry[]> {
    return this.store.auditList(params);
  }
}
