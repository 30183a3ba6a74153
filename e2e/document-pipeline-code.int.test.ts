import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { documentPipeline } from '../examples/document-pipeline.js';
import type { Engine } from '../src/engine.js';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { backends } from '../src/testing/backends.js';
import { eventually, testEngine } from '../src/testing/engine.js';

describe.each(backends)(
  'the document pipeline in TypeScript (examples/document-pipeline.ts) against the mock services on $name',
  (backend) => {
    let mock: MockServices;
    let engine: Engine;
    let close: () => Promise<void>;
    const input = () => ({ services: mock.url, content: '# Results\nRevenue grew.', title: 'Q3' });
    const count = (method: string, path: string) => mock.calls({ method, path }).length;
    const ended = (id: string) =>
      eventually(
        async () =>
          ((v) => (['success', 'partial_success', 'failed', 'cancelled'].includes(v.status) ? v : undefined))(
            await engine.run(id),
          ),
        30_000,
      );
    const states = async (id: string) =>
      (await engine.journal.readStream(`run:${id}`))
        .filter((e) => e.type === 'state.changed')
        .map((e) => (e.data as { name: string }).name);

    beforeAll(async () => {
      mock = await startMockServices({ speed: 20, seed: 3 });
    });
    afterAll(() => mock.close());
    beforeEach(async () => {
      mock.reset();
      const t = await testEngine(backend, { workflows: [documentPipeline], pollMs: 100 });
      engine = t.engine;
      close = t.close;
    });
    afterEach(() => close());

    it('happy path: DELIVERED with both artifacts, each state once in order', async () => {
      const run = await engine.start(documentPipeline, input());
      const output = (await run.result()) as { word: string; powerpoint: string };
      expect(output.word).toContain('/content');
      expect(await engine.run(run.id)).toMatchObject({ status: 'success', state: 'DELIVERED' });
      expect(await states(run.id)).toEqual([
        'INITIALIZED',
        'SUBMITTED',
        'CONTENT_NORMALIZED',
        'LAYOUT_QUEUED',
        'LAYOUT_PROCESSING',
        'LAYOUT_COMPLETE',
        'RENDERING_QUEUED',
        'RENDERING_PROCESSING',
        'RENDERING_PROCESSING',
        'RENDERING_COMPLETE',
        'DELIVERED',
      ]);
      expect(count('POST', '/v1/layout/proposals')).toBe(1);
    });

    it('503 twice on the layout request: one key for the three tries; PowerPoint failing ends partial_success / PARTIAL_COMPLETE', async () => {
      mock.setFaults([
        { endpoint: 'POST /v1/layout/proposals', status: 503, times: 2 },
        { endpoint: 'POST /v1/render/presentations', job: 'fail', error: 'Image asset not found' },
      ]);
      const run = await engine.start(documentPipeline, input());
      const view = await ended(run.id);
      expect(view).toMatchObject({
        status: 'partial_success',
        state: 'PARTIAL_COMPLETE',
        output: { word: expect.stringContaining('/content'), powerpoint: null },
      });
      const posts = mock.calls({ method: 'POST', path: '/v1/layout/proposals' });
      expect(posts.map((c) => c.status)).toEqual([503, 503, 202]);
      expect(new Set(posts.map((c) => c.idempotency_key)).size).toBe(1);
      expect(count('DELETE', '/v1/intake/sessions/{id}')).toBe(0);
    });

    it('cancel mid-render: each render job cancelled once, CANCELLED, the session deleted', async () => {
      mock.setFaults([{ endpoint: 'POST /v1/render/*', job: 'hang', times: 'always' }]);
      const run = await engine.start(documentPipeline, input());
      await eventually(
        async () =>
          (await engine.journal.readStream(`run:${run.id}`)).filter(
            (e) => e.type === 'poll.attempted' && (e.data as { seq: string }).seq.toString().includes('.'),
          ).length >= 2,
        30_000,
      );
      await engine.cancel(run.id);
      const view = await ended(run.id);
      expect(view).toMatchObject({ status: 'cancelled', state: 'CANCELLED' });
      const cancels = mock.calls({ method: 'POST', path: '/v1/render/jobs/{id}/cancel' }).map((c) => c.path);
      expect(cancels).toHaveLength(2);
      expect(new Set(cancels).size).toBe(2);
      expect(count('DELETE', '/v1/intake/sessions/{id}')).toBe(1);
    });
  },
);
