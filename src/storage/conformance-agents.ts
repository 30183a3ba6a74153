import { describe, expect, it } from 'vitest';
import type { AgentEventRow, AgentRunRow, AgentToolCallRow } from './ledger.js';
import type { Store } from './store.js';

const event = (id: string, over: Partial<AgentEventRow> = {}): AgentEventRow => ({
  id,
  conversation_id: 'c1',
  user_id: 'u1',
  source: 'whatsapp_webhook',
  input_type: 'text',
  payload: { text: 'hi', n: [1, 2] },
  idempotency_key: `key-${id}`,
  agent: 'sample-agent',
  run_id: `run-${id}`,
  decision: 'queued',
  status: 'pending',
  attempt_count: 0,
  available_at: 1000,
  last_error: null,
  created_at: 1000,
  updated_at: 1000,
  ...over,
});

const run = (id: string, over: Partial<AgentRunRow> = {}): AgentRunRow => ({
  id,
  event_id: null,
  conversation_id: 'c1',
  user_id: 'u1',
  agent: 'sample-agent',
  status: 'pending',
  graph_version: 'v1',
  input_class: 'text',
  started_at: null,
  ended_at: null,
  failure_reason: null,
  retry_of: null,
  created_at: 1000,
  updated_at: 1000,
  ...over,
});

const call = (id: string, runId: string, over: Partial<AgentToolCallRow> = {}): AgentToolCallRow => ({
  id,
  run_id: runId,
  external_idempotency_key: `${runId}:act:issue_refund#${id}`,
  node: 'act',
  seq: null,
  tool_name: 'issue_refund',
  risk_level: 'high',
  input: { order: 'o-1', amount: 5 },
  output: null,
  status: 'blocked',
  error: null,
  attempts: 0,
  started_at: null,
  ended_at: null,
  approval_status: 'pending',
  approval_by: null,
  approval_reason: null,
  approval_expires_at: 5000,
  decided_at: null,
  created_at: 1000,
  updated_at: 1000,
  ...over,
});

/** The agent ledger's tables (`ledger.ts`), the same on every backend (`conformance.ts` sets up the store). */
export function agentLedgerConformance(h: { store: () => Store }): void {
  describe('agent ledger', () => {
    it('stores an event once per idempotency key, finds it by id and key, and grows attempt_count only', async () => {
      const s = h.store();
      await s.agentEventPut({ event: event('e1') });
      await expect(s.agentEventPut({ event: event('e2', { idempotency_key: 'key-e1' }) })).rejects.toThrow();
      expect(await s.agentEventGet({ id: 'e1' })).toEqual(event('e1'));
      expect(await s.agentEventGet({ idempotency_key: 'key-e1' })).toEqual(event('e1'));
      expect(await s.agentEventGet({ id: 'nope' })).toBeUndefined();
      await s.agentEventPut({ event: event('e3', { run_id: 'run-e1', created_at: 2000, decision: 'coalesced' }) });
      expect(
        await s.agentEventUpdate({
          run_id: 'run-e1',
          change: { status: 'processing', attempt_count: 3, available_at: 9000 },
          at: 3000,
        }),
      ).toBe(2);
      await s.agentEventUpdate({ run_id: 'run-e1', change: { attempt_count: 2, last_error: 'Error: boom' }, at: 4000 });
      const both = await s.agentEventList({ run_id: 'run-e1' });
      expect(both.map((e) => [e.id, e.status, e.attempt_count, e.available_at, e.last_error, e.updated_at])).toEqual([
        ['e1', 'processing', 3, 9000, 'Error: boom', 4000],
        ['e3', 'processing', 3, 9000, 'Error: boom', 4000],
      ]);
    });

    it('lists events newest first (received time, then id), by each filter and together, with an event id cursor', async () => {
      const s = h.store();
      for (const [id, at, status, conversation, user, source] of [
        ['e1', 1000, 'done', 'c1', 'u1', 'whatsapp_webhook'],
        ['e2', 2000, 'failed', 'c2', 'u1', 'email'],
        ['e3', 2000, 'failed', 'c1', 'u2', 'whatsapp_webhook'],
        ['e4', 3000, 'pending', 'c1', 'u1', 'email'],
        ['e0', 4000, 'failed', 'c1', 'u1', 'whatsapp_webhook'],
      ] as const) {
        await s.agentEventPut({
          event: event(id, { created_at: at, status, conversation_id: conversation, user_id: user, source }),
        });
      }
      const ids = async (p: Omit<Parameters<Store['agentEventPage']>[0], 'limit'>, limit = 10) =>
        (await s.agentEventPage({ limit, ...p })).map((e) => e.id);
      // e2 and e3 arrived in the same millisecond: the later id first
      expect(await ids({})).toEqual(['e0', 'e4', 'e3', 'e2', 'e1']);
      expect(await ids({}, 2)).toEqual(['e0', 'e4']);
      expect(await ids({ after: 'e4' }, 2)).toEqual(['e3', 'e2']);
      expect(await ids({ after: 'e3' }, 2)).toEqual(['e2', 'e1']);
      expect(await ids({ after: 'e1' })).toEqual([]);
      expect(await ids({ status: 'failed' })).toEqual(['e0', 'e3', 'e2']);
      expect(await ids({ conversation_id: 'c2' })).toEqual(['e2']);
      expect(await ids({ user_id: 'u2' })).toEqual(['e3']);
      expect(await ids({ source: 'email' })).toEqual(['e4', 'e2']);
      expect(await ids({ status: 'failed', conversation_id: 'c1', user_id: 'u1', source: 'whatsapp_webhook' })).toEqual(
        ['e0'],
      );
      expect(await ids({ status: 'failed', after: 'e3' })).toEqual(['e2']);
      expect((await s.agentEventPage({ limit: 1, user_id: 'u2' }))[0]).toEqual(
        event('e3', {
          created_at: 2000,
          status: 'failed',
          conversation_id: 'c1',
          user_id: 'u2',
          source: 'whatsapp_webhook',
        }),
      );
    });

    it('redrives only a failed event: pending, a fresh attempt count, its new run, which names the old one', async () => {
      const s = h.store();
      await s.agentRunPut({ run: run('old', { status: 'failed' }) });
      await s.agentEventPut({
        event: event('f1', {
          run_id: 'old',
          status: 'failed',
          attempt_count: 3,
          last_error: 'Error: down',
          available_at: 1500,
        }),
      });
      await s.agentEventPut({ event: event('d1', { run_id: 'old', status: 'done', attempt_count: 1 }) });
      await s.agentRunPut({ run: run('new') });
      expect(await s.agentEventRedrive({ id: 'd1', run_id: 'new', retry_of: 'old', at: 5000 })).toBe(false);
      expect(await s.agentRunGet({ id: 'new' })).toMatchObject({ retry_of: null, updated_at: 1000 });
      expect(await s.agentEventRedrive({ id: 'f1', run_id: 'new', retry_of: 'old', at: 5000 })).toBe(true);
      expect(await s.agentEventGet({ id: 'f1' })).toEqual(
        event('f1', {
          run_id: 'new',
          status: 'pending',
          attempt_count: 0,
          last_error: null,
          available_at: 5000,
          updated_at: 5000,
        }),
      );
      expect(await s.agentEventGet({ id: 'd1' })).toMatchObject({ run_id: 'old', status: 'done' });
      expect(await s.agentRunGet({ id: 'new' })).toMatchObject({ retry_of: 'old', updated_at: 5000 });
      expect(await s.agentRunGet({ id: 'old' })).toEqual(run('old', { status: 'failed' }));
      expect(await s.agentEventRedrive({ id: 'f1', run_id: 'other', retry_of: 'new', at: 6000 })).toBe(false);
      expect(await s.agentEventRedrive({ id: 'missing', run_id: 'other', retry_of: 'new', at: 6000 })).toBe(false);
    });

    it('moves a run or its events only along an edge (`from`): the rest of an event change applies to all', async () => {
      const s = h.store();
      await s.agentRunPut({ run: run('m1', { status: 'pending' }) });
      expect(
        await s.agentRunUpdate({
          id: 'm1',
          change: { status: 'success', ended_at: 5000 },
          at: 5000,
          from: ['running'],
        }),
      ).toBe(false);
      expect(await s.agentRunGet({ id: 'm1' })).toMatchObject({ status: 'pending', ended_at: null, updated_at: 1000 });
      expect(await s.agentRunUpdate({ id: 'm1', change: { status: 'running' }, at: 6000, from: ['pending'] })).toBe(
        true,
      );
      expect(await s.agentRunGet({ id: 'm1' })).toMatchObject({ status: 'running', updated_at: 6000 });
      await s.agentEventPut({ event: event('m-e1', { run_id: 'm1', status: 'pending' }) });
      await s.agentEventPut({
        event: event('m-e2', { run_id: 'm1', status: 'done', idempotency_key: 'key-m-e2', created_at: 2000 }),
      });
      expect(
        await s.agentEventUpdate({
          run_id: 'm1',
          change: { status: 'processing', attempt_count: 1 },
          at: 7000,
          from: ['pending'],
        }),
      ).toBe(2);
      const events = await s.agentEventList({ run_id: 'm1' });
      expect(events.map((e) => [e.id, e.status, e.attempt_count, e.updated_at])).toEqual([
        ['m-e1', 'processing', 1, 7000],
        ['m-e2', 'done', 1, 7000],
      ]);
    });

    it('lists runs newest or oldest first by id, filtered, with an id cursor', async () => {
      const s = h.store();
      for (const [id, conversation, status] of [
        ['r1', 'c1', 'success'],
        ['r2', 'c2', 'running'],
        ['r3', 'c1', 'pending'],
        ['r4', 'c1', 'success'],
      ] as const) {
        await s.agentRunPut({ run: run(id, { conversation_id: conversation, status }) });
      }
      expect(await s.agentRunGet({ id: 'r2' })).toEqual(run('r2', { conversation_id: 'c2', status: 'running' }));
      expect((await s.agentRunList({ limit: 10 })).map((r) => r.id)).toEqual(['r4', 'r3', 'r2', 'r1']);
      expect((await s.agentRunList({ limit: 2, conversation_id: 'c1' })).map((r) => r.id)).toEqual(['r4', 'r3']);
      expect((await s.agentRunList({ limit: 2, conversation_id: 'c1', after: 'r3' })).map((r) => r.id)).toEqual(['r1']);
      expect(
        (await s.agentRunList({ limit: 10, conversation_id: 'c1', order: 'asc', after: 'r1' })).map((r) => r.id),
      ).toEqual(['r3', 'r4']);
      expect((await s.agentRunList({ limit: 10, status: 'success', user_id: 'u1' })).map((r) => r.id)).toEqual([
        'r4',
        'r1',
      ]);
      expect(
        await s.agentRunUpdate({
          id: 'r3',
          change: { status: 'failed', ended_at: 7000, failure_reason: 'Error: x' },
          at: 7000,
        }),
      ).toBe(true);
      expect(await s.agentRunUpdate({ id: 'missing', change: { status: 'failed' }, at: 7000 })).toBe(false);
      expect(await s.agentRunGet({ id: 'r3' })).toMatchObject({
        status: 'failed',
        ended_at: 7000,
        failure_reason: 'Error: x',
        updated_at: 7000,
        started_at: null,
      });
    });

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
  });
}
