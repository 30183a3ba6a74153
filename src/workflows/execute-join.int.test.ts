import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import { useServer } from '../server/test-server.js';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';
import { runStream } from '../runtime/pass/history.js';

const steps = [{ id: 'say', type: 'log', config: { message: 'hi {{trigger.user}}' } }];
const flows = {
  debounced: { debounce: { key: 'trigger.user', period: '1h' } },
  batched: { batch: { key: 'trigger.user', max_size: 100, timeout: '1h' } },
};

// A stored workflow's executes that join their key's run (a debounce window, a batch) with one Idempotency-Key, at
// once: the key is read under the window's (batch's) lock, so a repeat joins nothing, however the executes race.
describe.each(backends)('one Idempotency-Key racing into a stored debounce window or batch on $name', (backend) => {
  const served = useServer(backend);
  const { call } = served;

  for (const [kind, flow] of Object.entries(flows))
    it(`10 concurrent executes of a ${kind} stored workflow with one key join once, all naming one execution`, async () => {
      const created = await call('POST', '/workflows', { name: `join-${kind}-${backend.name}`, ...flow, steps });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      const key = `k-${kind}-${Math.random().toString(36).slice(2)}`;
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          fetch(`${served.server.url}/workflows/${id}/execute`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'idempotency-key': key },
            body: JSON.stringify({ trigger_data: { user: 'ada', n } }),
          }),
        ),
      );
      const bodies = await Promise.all(
        answers.map(async (a) => ({ status: a.status, body: (await a.json()) as Record<string, unknown> })),
      );
      const executions = new Set(bodies.map((b) => b.body.execution_id));
      expect(executions.size).toBe(1);
      expect(bodies.filter((b) => b.body.duplicate === false).map((b) => b.status)).toEqual([202]);
      expect(bodies.filter((b) => b.body.duplicate === true).map((b) => b.status)).toEqual(Array(9).fill(200));
      const [execution] = [...executions] as string[];
      // each start of a window or a batch journals one `run.debounced` / `run.batched` on its run: one start joined
      const joins = async () =>
        (await call('GET', `/runs/${execution}/events?types=run.debounced,run.batched`)).body.events as unknown[];
      expect(await joins()).toHaveLength(1);
      const run = (await call('GET', `/runs/${execution}`)).body as {
        status: string;
        input: { trigger_data: unknown };
      };
      expect(run.status).toBe('waiting');
      if (kind === 'batched') expect(run.input.trigger_data).toHaveLength(1);
      // another key joins the same run: a second start of it
      const other = await call('POST', `/workflows/${id}/execute`, { trigger_data: { user: 'ada', n: 99 } });
      expect(other.body.execution_id).toBe(execution);
      expect(await joins()).toHaveLength(2);
      await call('POST', `/runs/${execution}/cancel`, { reason: 'test over' });
    });
});

describe.each(backends)('one trigger key racing into a stored debounce window or batch on $name', (backend) => {
  it('10 concurrent starts in transactions with one key join once, all naming one execution', async () => {
    const { engine, close } = await testEngine(backend, { pollMs: 100 });
    try {
      const { definitions, executions } = storedWorkflows(engine, { secretKey: randomBytes(32) });
      for (const [kind, flow] of Object.entries(flows)) {
        const { id } = await definitions.create({ name: `trigger-${kind}`, ...flow, steps });
        const started = await Promise.all(
          Array.from({ length: 10 }, (_, n) =>
            engine.store.transaction((tx) =>
              executions.startIn(tx, id, { trigger_data: { user: 'ada', n }, trigger_type: 'event' }, 'evt_1'),
            ),
          ),
        );
        const ids = new Set(started.map((s) => s.execution_id));
        expect(ids.size).toBe(1);
        const execution = [...ids][0]!;
        const events = await engine.journal.readStream(runStream(execution), { limit: 1000 });
        expect(events.filter((e) => e.type === 'run.debounced' || e.type === 'run.batched')).toHaveLength(1);
        await engine.runtime.cancel(execution, 'test over');
      }
    } finally {
      await close();
    }
  });
});
