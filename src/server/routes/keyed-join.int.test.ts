import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { storedWorkflows } from '../../app/workflows.js';
import { testEngine } from '../../testing/engine.js';
import { createRunStarter } from '../../triggers/starter.js';
import { workflow } from '../../runtime/workflow.js';
import { backends } from '../../testing/backends.js';
import { useServer } from '../test-server.js';

const batched = workflow(
  'join-batched',
  { batch: { maxSize: 100, timeout: '1h' } },
  async (_ctx, inputs: unknown) => inputs,
);
const debounced = workflow(
  'join-debounced',
  { debounce: { period: '1h', mode: 'all' } },
  async (_ctx, inputs: unknown) => inputs,
);

// Starts that join their key's run (a batch, a debounce window) with one Idempotency-Key, at once: the key is taken
// under the batch's (window's) lock, so a repeat joins nothing, however the starts race.
describe.each(backends)('one Idempotency-Key racing into a batch or a debounce window on $name', (backend) => {
  const served = useServer(backend, { workers: true, pollMs: 100, codeWorkflows: [batched, debounced] });
  const { call } = served;

  for (const name of ['join-batched', 'join-debounced'])
    it(`10 concurrent POST /runs of ${name} with one key add one input`, async () => {
      const key = `k-${name}-${Math.random().toString(36).slice(2)}`;
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          fetch(`${served.server.url}/runs`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'idempotency-key': key },
            body: JSON.stringify({ workflow: name, input: { n } }),
          }),
        ),
      );
      const bodies = await Promise.all(
        answers.map(async (a) => ({ status: a.status, body: (await a.json()) as Record<string, unknown> })),
      );
      expect(bodies.map((b) => b.status)).toEqual(Array(10).fill(202));
      const ids = new Set(bodies.map((b) => b.body.run_id));
      expect(ids.size).toBe(1);
      expect(bodies.filter((b) => b.body.duplicate === false)).toHaveLength(1);
      const [id] = [...ids] as string[];
      const run = (await call('GET', `/runs/${id}`)).body as { input: unknown[]; status: string };
      expect(run.status).toBe('waiting');
      expect(run.input).toHaveLength(1);
      // another key joins the same batch: two inputs
      await call('POST', '/runs', { workflow: name, input: { n: 99 } });
      expect(((await call('GET', `/runs/${id}`)).body as { input: unknown[] }).input).toHaveLength(2);
      await call('POST', `/runs/${id}/cancel`, { reason: 'test over' });
    });
});

describe.each(backends)('one trigger key racing into a batch or a debounce window on $name', (backend) => {
  it('10 concurrent starts of one trigger key add one input, to one run', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [batched, debounced], pollMs: 100 });
    try {
      const workflows = storedWorkflows(engine, { secretKey: randomBytes(32) });
      const starter = createRunStarter({ engine, store: engine.store, workflows });
      for (const name of ['join-batched', 'join-debounced']) {
        const started = await Promise.all(
          Array.from({ length: 10 }, (_, n) =>
            starter.start({ target: { workflow: name }, input: { n }, key: `evt_1:${name}` }),
          ),
        );
        const ids = new Set(started.map((s) => s.run_id));
        expect(ids.size).toBe(1);
        const id = [...ids][0]!;
        expect((await engine.run(id)).input).toHaveLength(1);
        await engine.runtime.cancel(id, 'test over');
      }
    } finally {
      await close();
    }
  });
});
