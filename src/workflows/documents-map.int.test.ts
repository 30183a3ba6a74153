import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import { createApp } from '../server/app.js';
import { startMockServices, type MockServices } from '../mock-services/index.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';

const example = JSON.parse(readFileSync(new URL('../../examples/documents-map.json', import.meta.url), 'utf8'));

describe.each(backends)('examples/documents-map.json against the mock services on $name', (backend) => {
  let mock: MockServices;
  beforeAll(async () => {
    mock = await startMockServices({ speed: 20, seed: 11 });
  });
  afterAll(() => mock.close());

  it('takes in ten documents three at a time; one refused of ten tolerated ends partial_success, in order', async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    try {
      const { definitions, executions } = storedWorkflows(t.engine, {
        secretKey: randomBytes(32),
        allow: ['127.0.0.1'],
      });
      const wf = await definitions.create(example);
      // a number is no content: the intake service refuses it (422), that document's item fails for good
      const documents = Array.from({ length: 10 }, (_, i) => ({ title: `Doc ${i}`, content: i === 4 ? 42 : `# ${i}` }));
      const { execution_id } = await executions.execute(wf.id, { trigger_data: { services: mock.url, documents } });
      const done = await eventually(async () => {
        const r = await executions.get(wf.id, execution_id);
        return ['success', 'partial_success', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
      }, 60_000);
      expect(done).toMatchObject({ status: 'partial_success', state: 'SOME_FAILED' });
      const results = done.steps[0]!.output as { status: string; output?: { index: number; title: string } }[];
      expect(results.map((r) => r.status)).toEqual(documents.map((_, i) => (i === 4 ? 'failed' : 'success')));
      results.forEach((r, i) => {
        if (i !== 4) expect(r.output).toMatchObject({ index: i, title: `Doc ${i}`, status: 'ready' });
      });
      expect(results[4]).toMatchObject({ step: 'submit', error: expect.stringMatching(/422/) });
      expect(done.steps[1]).toMatchObject({ step_id: 'report', status: 'success' });
      expect(mock.calls({ method: 'POST', path: '/v1/intake/sessions' })).toHaveLength(10);
    } finally {
      await t.close();
    }
  }, 90_000);

  it('answers 400 naming each bad field of the new steps when a definition is saved', async () => {
    const t = await testEngine(backend);
    try {
      const app = createApp({ engine: t.engine, workflows: storedWorkflows(t.engine, { secretKey: randomBytes(32) }) });
      const documents = example.steps[0];
      const definition = {
        name: 'bad',
        steps: [
          { ...documents, config: { ...documents.config, items: 'not a list', concurrency: 0 } },
          { id: 'nap', type: 'sleep', config: { until: 'tomorrow' } },
          { id: 'paid', type: 'wait_for_event', config: { event: 'payment.received', match: 'order_id = 1' } },
          { id: 'child', type: 'workflow', config: {} },
        ],
      };
      const res = await app.fetch(
        new Request('http://api/workflows', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(definition),
        }),
      );
      expect(res.status).toBe(400);
      const { problems } = ((await res.json()) as { error: { problems: { path: string }[] } }).error;
      expect(problems.map((p) => p.path).sort()).toEqual([
        'steps[0].config.concurrency',
        'steps[0].config.items',
        'steps[1].config.until',
        'steps[2].config.match',
        'steps[3].config.workflow',
      ]);
    } finally {
      await t.close();
    }
  });
});
