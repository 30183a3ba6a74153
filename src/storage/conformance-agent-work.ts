import { expect, it } from 'vitest';
import { call, event, run } from './conformance-rows.js';
import type { Store } from './store.js';

/**
 * The agent ledger cases about a run's work (steps, checkpoints, tool calls and their approvals) and
 * deleting runs, registered inside the suite's `agent ledger` block by `agentLedgerConformance`.
 */
export function agentRunWorkConformance(h: { store: () => Store }): void {
  it('keeps one step row per node attempt and checkpoints in run order, with JSON snapshots', async () => {
    const s = h.store();
    await s.agentRunPut({ run: run('r1') });
    const step = {
      run_id: 'r1',
      node: 'act',
      status: 'started' as const,
      input_snapshot: { a: 1 },
      output_snapshot: null,
      error: null,
      latency_ms: null,
      created_at: 1,
      updated_at: 1,
    };
    await s.agentStepPut({ step: { ...step, id: 's2', seq: 4, attempt: 2 } });
    await s.agentStepPut({ step: { ...step, id: 's1', seq: 4, attempt: 1 } });
    await s.agentStepPut({ step: { ...step, id: 's0', seq: 1, attempt: 1, node: 'classify' } });
    await expect(s.agentStepPut({ step: { ...step, id: 's9', seq: 4, attempt: 1 } })).rejects.toThrow();
    expect(
      await s.agentStepUpdate({
        run_id: 'r1',
        seq: 4,
        attempt: 1,
        change: { status: 'error', error: 'Error: no' },
        at: 5,
      }),
    ).toBe(true);
    await s.agentStepUpdate({
      run_id: 'r1',
      seq: 4,
      attempt: 2,
      change: { status: 'ok', output_snapshot: ['x', { y: null }], latency_ms: 12 },
      at: 6,
    });
    const steps = await s.agentStepList({ run_id: 'r1' });
    expect(steps.map((x) => [x.id, x.status, x.error, x.output_snapshot, x.latency_ms])).toEqual([
      ['s0', 'started', null, null, null],
      ['s1', 'error', 'Error: no', null, null],
      ['s2', 'ok', null, ['x', { y: null }], 12],
    ]);
    await s.agentCheckpointPut({
      checkpoint: { id: 'k2', run_id: 'r1', node: 'act', seq: 4, state: { done: true }, created_at: 9 },
    });
    await s.agentCheckpointPut({
      checkpoint: { id: 'k1', run_id: 'r1', node: 'classify', seq: 1, state: 'refund', created_at: 8 },
    });
    expect((await s.agentCheckpointList({ run_id: 'r1' })).map((c) => [c.node, c.state])).toEqual([
      ['classify', 'refund'],
      ['act', { done: true }],
    ]);
  });

  it('decides an approval once: a change guarded by the pending status applies only while it is pending', async () => {
    const s = h.store();
    await s.agentRunPut({ run: run('r1') });
    await s.agentToolCallPut({ call: call('tc1', 'r1') });
    await s.agentToolCallPut({
      call: call('tc2', 'r1', {
        tool_name: 'lookup_order',
        risk_level: 'low',
        status: 'ok',
        approval_status: null,
        approval_expires_at: null,
        created_at: 900,
      }),
    });
    await expect(
      s.agentToolCallPut({
        call: call('tc3', 'r1', { external_idempotency_key: call('tc1', 'r1').external_idempotency_key }),
      }),
    ).rejects.toThrow();
    const key = call('tc1', 'r1').external_idempotency_key;
    expect((await s.agentToolCallList({ approval_status: 'pending', limit: 10 })).map((c) => c.id)).toEqual(['tc1']);
    const decide = (status: 'approved' | 'rejected', at: number) =>
      s.agentToolCallUpdate({
        external_idempotency_key: key,
        change: { approval_status: status, approval_by: 'ana', approval_reason: 'ok', decided_at: at },
        at,
        approval_status: 'pending',
      });
    expect(await decide('approved', 2000)).toBe(true);
    expect(await decide('rejected', 2100)).toBe(false);
    expect(
      await s.agentToolCallUpdate({
        external_idempotency_key: key,
        change: { seq: 7, status: 'started', attempts: 1 },
        at: 2500,
      }),
    ).toBe(true);
    expect(await s.agentToolCallUpdate({ run_id: 'r1', seq: 8, change: { status: 'ok' }, at: 3000 })).toBe(false);
    expect(
      await s.agentToolCallUpdate({
        run_id: 'r1',
        seq: 7,
        change: { status: 'ok', output: { refunded: 5 }, ended_at: 3000 },
        at: 3000,
      }),
    ).toBe(true);
    expect(await s.agentToolCallGet({ external_idempotency_key: key })).toMatchObject({
      id: 'tc1',
      seq: 7,
      attempts: 1,
      approval_status: 'approved',
      approval_by: 'ana',
      decided_at: 2000,
      status: 'ok',
      output: { refunded: 5 },
      input: { order: 'o-1', amount: 5 },
    });
    expect(await s.agentToolCallGet({ id: 'tc2' })).toMatchObject({ output: null, approval_status: null });
    expect((await s.agentToolCallList({ run_id: 'r1', limit: 10 })).map((c) => c.id)).toEqual(['tc2', 'tc1']);
    expect(await s.agentToolCallList({ approval_status: 'pending', limit: 10 })).toEqual([]);
  });

  it('deletes runs whole from every ledger table, and only the events no remaining run starts from', async () => {
    const s = h.store();
    const step = {
      node: 'act',
      attempt: 1,
      status: 'ok' as const,
      input_snapshot: null,
      output_snapshot: null,
      error: null,
      latency_ms: 1,
      created_at: 1,
      updated_at: 1,
    };
    for (const id of ['r1', 'r2', 'r3']) {
      await s.agentEventPut({ event: event(`e-${id}`, { run_id: id }) });
      await s.agentRunPut({ run: run(id, { event_id: `e-${id}` }) });
      await s.agentStepPut({ step: { ...step, id: `s-${id}`, run_id: id, seq: 1 } });
      await s.agentToolCallPut({ call: call(`tc-${id}`, id) });
      await s.agentCheckpointPut({
        checkpoint: { id: `k-${id}`, run_id: id, node: 'act', seq: 1, state: {}, created_at: 1 },
      });
    }
    // a coalesced event handled by r1, and one whose run is r1 although r3 started from it (not a shape intake makes, but the rows allow it)
    await s.agentEventPut({ event: event('e-joined', { run_id: 'r1', decision: 'coalesced' }) });
    await s.agentEventPut({ event: event('e-shared', { run_id: 'r2' }) });
    await s.agentRunPut({ run: run('r4', { event_id: 'e-shared' }) });
    expect(await s.agentRunDelete({ ids: ['r1', 'r2', 'missing'] })).toEqual({ rows: 2 * 4 + 3 });
    for (const id of ['r1', 'r2']) {
      expect(await s.agentRunGet({ id })).toBeUndefined();
      expect(await s.agentStepList({ run_id: id })).toEqual([]);
      expect(await s.agentToolCallList({ run_id: id, limit: 10 })).toEqual([]);
      expect(await s.agentCheckpointList({ run_id: id })).toEqual([]);
      expect(await s.agentEventList({ run_id: id })).toEqual(
        id === 'r2' ? [expect.objectContaining({ id: 'e-shared' })] : [],
      );
    }
    expect(await s.agentRunGet({ id: 'r3' })).toBeDefined();
    expect((await s.agentStepList({ run_id: 'r3' })).map((x) => x.id)).toEqual(['s-r3']);
    expect((await s.agentToolCallList({ run_id: 'r3', limit: 10 })).map((x) => x.id)).toEqual(['tc-r3']);
    expect((await s.agentCheckpointList({ run_id: 'r3' })).map((x) => x.id)).toEqual(['k-r3']);
    expect((await s.agentEventList({ run_id: 'r3' })).map((x) => x.id)).toEqual(['e-r3']);
    expect(await s.agentRunDelete({ ids: [] })).toEqual({ rows: 0 });
    // in a transaction that rolls back, nothing goes
    await expect(
      s.transaction(async (tx) => {
        await tx.agentRunDelete({ ids: ['r3'] });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await s.agentRunGet({ id: 'r3' })).toBeDefined();
  });

  it('writes nothing when the transaction rolls back', async () => {
    const s = h.store();
    await expect(
      s.transaction(async (tx) => {
        await tx.agentEventPut({ event: event('e1') });
        await tx.agentRunPut({ run: run('r1', { event_id: 'e1' }) });
        expect(await tx.agentRunGet({ id: 'r1' })).toBeDefined();
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await s.agentEventGet({ id: 'e1' })).toBeUndefined();
    expect(await s.agentRunGet({ id: 'r1' })).toBeUndefined();
  });
}
