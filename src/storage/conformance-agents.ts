import { describe, expect, it } from 'vitest';
import { event, run } from './conformance-rows.js';
import { agentRunWorkConformance } from './conformance-agent-work.js';
import type { Store } from './store.js';

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

    agentRunWorkConformance(h);
  });
}
