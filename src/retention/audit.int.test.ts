import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import type { NewAuditEntry } from '../storage/store.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { withAuditAge } from './audit.js';

const DAY = 86_400_000;

describe('the audit trail age', () => {
  it('is 90 days by default, a duration or off; an age RUNLEDGER_RETENTION gives wins; a bad one names the setting', () => {
    expect(withAuditAge({ runs: DAY }, undefined)).toEqual({ runs: DAY, audit: 90 * DAY });
    expect(withAuditAge({}, '365d')).toEqual({ audit: 365 * DAY });
    expect(withAuditAge({ runs: DAY }, 'off')).toEqual({ runs: DAY });
    expect(withAuditAge({ audit: DAY }, '365d')).toEqual({ audit: DAY });
    expect(() => withAuditAge({}, 'soon')).toThrow(/RUNLEDGER_AUDIT_RETENTION/);
  });
});

describe.each(backends)('audit rows and retention on $name', (backend) => {
  let engine: Engine;
  let close: (() => Promise<void>) | undefined;
  afterEach(() => close?.());

  const row = (n: number): NewAuditEntry => ({
    actor: 'bootstrap',
    issuedTo: n % 2 ? 'ana@example.com' : null,
    method: 'POST',
    route: '/runs/{id}/cancel',
    target: `run_${n}`,
    address: '127.0.0.1',
    outcome: n % 2 ? 202 : 409,
    detail: n % 2 ? null : 'conflict: ended',
  });

  it('deletes rows older than the age in batches, keeps newer ones, and counts them in a dry run too', async () => {
    ({ engine, close } = await testEngine(backend));
    for (let n = 1; n <= 5; n++) await engine.store.auditAppend(row(n));
    const listed = await engine.store.auditList({ limit: 10 });
    expect(listed.map((e) => e.target)).toEqual(['run_5', 'run_4', 'run_3', 'run_2', 'run_1']);
    expect(listed[0]).toMatchObject({ issuedTo: 'ana@example.com', outcome: 202, detail: null });
    expect(await engine.store.auditList({ limit: 10, outcome: 409, before: listed[0]!.seq })).toHaveLength(2);
    expect((await engine.retention.prune({ audit: DAY }))[0]).toMatchObject({ kind: 'audit', other: 0 });
    const newest = listed[0]!.at;
    await eventually(async () => (await engine.store.now()) > newest);
    expect((await engine.retention.prune({ audit: 0 }, { dryRun: true, batchSize: 2 }))[0]!.other).toBe(5);
    expect(await engine.store.auditList({ limit: 10 })).toHaveLength(5);
    expect((await engine.retention.prune({ audit: 0 }, { batchSize: 2, pauseMs: 0 }))[0]!.other).toBe(5);
    expect(await engine.store.auditList({ limit: 10 })).toEqual([]);
  });
});
