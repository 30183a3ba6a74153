import { toMs } from '../duration.js';
import type { Pruned, RetentionKind } from './retention.js';

/** How long audit rows are kept when RUNLEDGER_AUDIT_RETENTION is not set: 90 days. */
export const AUDIT_RETENTION_DEFAULT = '90d';

/**
 * The `audit` kind: rows of the audit trail answered before the age, oldest first, `batchSize` per statement.
 *
 * @example retention.register(auditKind()); await retention.prune({ audit: 90 * 86_400_000 })
 */
export function auditKind(): RetentionKind {
  return {
    name: 'audit',
    async sweep(store, options) {
      const total: Pruned = { kind: 'audit', runs: 0, events: 0, tasks: 0, other: 0 };
      for (;;) {
        if (options.signal?.aborted) return total;
        const deleted = await store.auditPrune({ before: options.before, limit: options.batchSize });
        total.other += deleted;
        if (deleted < options.batchSize) return total;
        if (!options.dryRun && options.pauseMs > 0)
          await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
      }
    },
  };
}

/**
 * The audit trail's age from RUNLEDGER_AUDIT_RETENTION added to a retention policy: a duration (default 90 days), or
 * `off` to keep every row. An age RUNLEDGER_RETENTION gives `audit` wins.
 *
 * @example withAuditAge({ runs: 86_400_000 }, undefined).audit // 7776000000
 */
export function withAuditAge<P extends Readonly<Record<string, number>>>(
  policy: P,
  text: string | undefined,
): Readonly<Record<string, number>> {
  if ('audit' in policy) return policy;
  const value = (text ?? AUDIT_RETENTION_DEFAULT).trim();
  if (value === 'off') return policy;
  return Object.freeze({ ...policy, audit: toMs(value, 'RUNLEDGER_AUDIT_RETENTION') });
}
