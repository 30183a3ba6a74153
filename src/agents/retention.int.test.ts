import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { RUN_KEYS } from '../runtime/start/keyed.js';
import { RUN_QUEUE } from '../runtime/runtime.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { AgentLedger } from './ledger.js';
import { sessions } from './service.js';
import { SESSION_VIEW } from './view.js';

describe.each(backends)('retention of agent runs on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });

  it('prunes a finished agent run whole (run, session, ledger rows, key stream), keeps one waiting for approval', async () => {
    const made = await testEngine(backend, { pollMs: 100 });
    close = made.close;
    const engine: Engine = made.engine;
    const service = sessions(engine, engine.store, { agents: [] });
    const ledger = new AgentLedger(engine, engine.store, service, { defaultAgent: 'sample-agent' });
    const send = (conversation_id: string, idempotency_key: string) =>
      ledger.intake({
        conversation_id,
        idempotency_key,
        user_id: 'u-1',
        source: 'whatsapp_webhook',
        input_type: 'text',
        payload: { text: 'refund order 1234 please' },
      });
    const status = async (id: string) => (await engine.store.agentRunGet({ id }))?.status;
    const pending = async (runId: string) =>
      (await ledger.approvals({ status: 'pending' })).items.find((c) => c.run_id === runId);
    // no pass of the run left to run (its last one commits its task after the run ended): retention skips a busy run
    const idle = (id: string) =>
      eventually(
        async () => (await engine.store.taskListActiveKeys({ queue: RUN_QUEUE, orderingKeys: [id] })).length === 0,
        20_000,
      );

    const done = await send('c-done', 'wamid.done');
    const call = await eventually(() => pending(done.run_id), 20_000);
    await ledger.decide(call.id, 'approved', { by: 'ana' });
    await eventually(async () => (await status(done.run_id)) === 'success', 20_000);
    await idle(done.run_id);
    const kept = await send('c-kept', 'wamid.kept');
    await eventually(() => pending(kept.run_id), 20_000);
    await eventually(async () => (await engine.run(kept.run_id)).status === 'waiting', 20_000);

    const before = await ledger.run(done.run_id);
    expect(before.steps.length).toBeGreaterThan(0);
    expect(before.tool_calls.length).toBe(2);
    expect(before.checkpoints.length).toBeGreaterThan(0);
    expect(await engine.journal.readStream(`session:${done.run_id}`)).not.toEqual([]);
    expect(await engine.journal.readStream('agent-event:wamid.done')).not.toEqual([]);

    const [pruned] = await engine.retention.prune({ runs: 0 }, { pauseMs: 0 });
    expect(pruned).toMatchObject({ kind: 'runs', runs: 1 });
    // ledger rows: 1 run + 3 steps + 2 tool calls + 3 checkpoints + 1 event, and the session row
    expect(pruned!.other).toBe(1 + before.steps.length + 2 + before.checkpoints.length + 1 + 1);

    const id = done.run_id;
    await expect(engine.run(id)).rejects.toThrow(/not found/);
    await expect(service.get(id)).rejects.toThrow(/not found/);
    expect(await engine.store.projectionGet({ name: SESSION_VIEW, key: id })).toBeUndefined();
    expect(await engine.store.projectionGet({ name: RUN_KEYS, key: id })).toBeUndefined();
    for (const stream of [`run:${id}`, `session:${id}`, 'agent-event:wamid.done'])
      expect(await engine.journal.readStream(stream)).toEqual([]);
    expect(await engine.store.agentRunGet({ id })).toBeUndefined();
    expect(await engine.store.agentEventGet({ id: done.event_id })).toBeUndefined();
    expect(await engine.store.agentEventGet({ idempotency_key: 'wamid.done' })).toBeUndefined();
    expect(await engine.store.agentEventList({ run_id: id })).toEqual([]);
    expect(await engine.store.agentStepList({ run_id: id })).toEqual([]);
    expect(await engine.store.agentToolCallList({ run_id: id, limit: 100 })).toEqual([]);
    expect(await engine.store.agentCheckpointList({ run_id: id })).toEqual([]);
    expect(await engine.store.agentToolCallGet({ id: call.id })).toBeUndefined();
    expect((await engine.queue.list({ queue: RUN_QUEUE, limit: 1000 })).filter((t) => t.orderingKey === id)).toEqual(
      [],
    );
    // no event names the run any more but the streams its conversation's runs share: the conversation's arrivals and
    // the sample's debounce windows of the conversation (its ordering key's turns are rows, not events)
    const mentions = (await engine.journal.readAll({ limit: 100_000 })).filter((e) => JSON.stringify(e).includes(id));
    expect(new Set(mentions.map((e) => e.streamId))).toEqual(
      new Set(['agent-conversation:c-done', 'debounce:agent:sample-agent:c-done']),
    );

    // the run waiting for approval stays whole, and still finishes
    expect(await status(kept.run_id)).toBe('waiting');
    expect((await service.get(kept.run_id)).status).toBe('running');
    expect((await ledger.run(kept.run_id)).tool_calls).toHaveLength(2);
    await ledger.decide((await pending(kept.run_id))!.id, 'approved', { by: 'ana' });
    await eventually(async () => (await status(kept.run_id)) === 'success', 20_000);
    await idle(kept.run_id);
    const [again] = await engine.retention.prune({ runs: 0 }, { pauseMs: 0 });
    expect(again!.runs).toBe(1);
    expect(await engine.store.agentRunGet({ id: kept.run_id })).toBeUndefined();
    expect((await ledger.runs()).items).toEqual([]);
  });
});
