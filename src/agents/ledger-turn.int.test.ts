import { afterEach, describe, expect, it } from 'vitest';
import { engineStore, type Engine } from '../engine.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import { conversationStream } from './conversation.js';
import { AgentLedger } from './ledger.js';
import { openTurn } from './ledger-turn.js';
import { sessions, type SessionService } from './service.js';
import { sessionStream } from './view.js';

const event = (conversation_id: string, n: number, agent: string) => ({
  conversation_id,
  user_id: 'u-1',
  source: 'test',
  input_type: 'text',
  payload: { n },
  idempotency_key: `${conversation_id}-${n}`,
  agent,
});

describe.each(backends)("a code agent's turn opening on $name", (backend) => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  async function open(workers: boolean): Promise<{ engine: Engine; ledger: AgentLedger; service: SessionService }> {
    const t = await testEngine(backend, { pollMs: 100, workers });
    close = t.close;
    const seen: string[] = [];
    const noop = defineAgent('noop', { ledger: {}, background: async () => {} });
    const entered = defineAgent('entered', {
      entrypoint: async (input: { events: Array<{ payload: { n: number } }> }) =>
        void seen.push(`entry ${input.events[0]!.payload.n}`),
      background: async () => void seen.push('background'),
    });
    const service = sessions(t.engine, engineStore(t.engine), { agents: [noop, entered] });
    return {
      engine: t.engine,
      ledger: new AgentLedger(t.engine, engineStore(t.engine), service, { defaultAgent: 'noop' }),
      service,
    };
  }

  it('writes the whole lifecycle of an event run, in order, and starts the run at its invocation', async () => {
    const { engine, ledger, service } = await open(true);
    const ended = (id: string) =>
      eventually(async () => ((await ledger.run(id)).status === 'success' ? ledger.run(id) : undefined), 20_000);
    const plain = (await ledger.intake(event('c-1', 1, 'noop'))).run_id;
    const withEntry = (await ledger.intake(event('c-2', 1, 'entered'))).run_id;
    for (const id of [plain, withEntry]) {
      const run = await ended(id);
      // the last step's completion is journaled with the run's end, just after the ledger's success
      await engine.runs.wait(id, { timeoutMs: 20_000 });
      const lifecycle = await service.events(id);
      expect(lifecycle.map((e) => e.type)).toEqual([
        'SESSION_INITIATED',
        'AGENT_INVOCATION_STARTED',
        'AGENT_INVOCATION_SUCCEEDED',
        'AGENT_ENTRYPOINT_STARTED',
        'AGENT_BACKGROUND_TASK_STARTED',
        'AGENT_BACKGROUND_TASK_COMPLETED',
      ]);
      expect(run.started_at).toBe(lifecycle[1]!.timestamp);
      expect(run.events.map((e) => e.status)).toEqual(['done']);
      const steps = (await engine.journal.readStream(`run:${id}`))
        .filter((e) => e.type === 'step.completed')
        .map((e) => (e.data as { name: string }).name);
      // one step opens the turn; an entrypoint is a step of its own, and the background's start follows it; the
      // success is written by the run's end, in its transaction: the run's last event commits with the session's
      expect(steps).toEqual(id === plain ? ['open'] : ['open', 'entrypoint', 'record:entered', 'background']);
      const [end] = await engine.journal.readStream(`run:${id}`, { backwards: true, limit: 1 });
      expect(end!.type).toBe('run.completed');
      // written after it, in its transaction (a step of its own wrote it before the run's end, in an earlier one)
      const [completed] = await engine.journal.readStream(sessionStream(id), { backwards: true, limit: 1 });
      expect(completed!.position).toBeGreaterThan(end!.position);
    }
  });

  it('writes nothing more when run again (a crash before its step completed), and gathers alone once the session ended', async () => {
    const { engine, ledger } = await open(false);
    const store = engineStore(engine);
    const o = { store, journal: engine.journal };
    const first = await ledger.intake(event('c-1', 1, 'noop'));
    const gather = { runId: first.run_id, conversationId: 'c-1', agent: 'noop' };
    const opened = await openTurn(o, first.run_id, false, gather);
    expect(opened.last.type).toBe('AGENT_BACKGROUND_TASK_STARTED');
    expect(opened.events.map((e) => e.event_id)).toEqual([first.event_id]);
    expect(await openTurn(o, first.run_id, false, gather)).toEqual(opened);
    const types = async (stream: string) => (await engine.journal.readStream(stream)).map((e) => e.type);
    expect(await types(sessionStream(first.run_id))).toEqual([
      'SESSION_INITIATED',
      'AGENT_INVOCATION_STARTED',
      'AGENT_INVOCATION_SUCCEEDED',
      'AGENT_ENTRYPOINT_STARTED',
      'AGENT_BACKGROUND_TASK_STARTED',
    ]);
    expect((await types(conversationStream('c-1'))).filter((t) => t === 'agent.run.started')).toHaveLength(1);
    expect((await ledger.run(first.run_id)).status).toBe('running');
    // the success recorded by a step (code before the run's end recorded it, or a crash inside that step): the run's
    // end finds it under the same key and writes it no second time
    await engine.journal.append(sessionStream(first.run_id), [{ type: 'AGENT_BACKGROUND_TASK_COMPLETED', data: {} }], {
      idempotencyKey: `session:${first.run_id}:finished`,
    });
    await engine.journal.append(`run:${first.run_id}`, [
      {
        type: 'run.completed',
        data: { output: { session_id: first.run_id, ended_with: 'AGENT_BACKGROUND_TASK_COMPLETED' } },
      },
    ]);
    expect((await types(sessionStream(first.run_id))).at(-1)).toBe('AGENT_BACKGROUND_TASK_COMPLETED');
    expect(await types(sessionStream(first.run_id))).toHaveLength(6);
    expect((await ledger.run(first.run_id)).status).toBe('success');

    // a session that ended before its turn (its run failed or was cancelled): its events are gathered, no lifecycle is written
    const second = await ledger.intake(event('c-2', 1, 'noop'));
    await engine.journal.append(sessionStream(second.run_id), [
      { type: 'SESSION_FAILED', data: { error_message: 'CancelledError: cancelled before its turn' } },
    ]);
    const late = await openTurn(o, second.run_id, false, { ...gather, runId: second.run_id, conversationId: 'c-2' });
    expect(late).toEqual({
      events: [expect.objectContaining({ event_id: second.event_id })],
      last: { type: null, timestamp: 0 },
    });
    expect(await types(sessionStream(second.run_id))).toEqual(['SESSION_INITIATED', 'SESSION_FAILED']);
  });
});
