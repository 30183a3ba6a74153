import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engine.js';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { createApp } from '../src/server/app.js';
import { listen, type Listening } from '../src/server/listen.js';
import { backends } from '../src/testing/backends.js';
import { eventually, testEngine } from '../src/testing/engine.js';
import { storedWorkflows } from '../src/app/workflows.js';
import { pipelineForTests } from './pipeline.js';

describe.each(backends)(
  'the document pipeline (brief 004 §14) as a stored workflow against the mock services on $name',
  (backend) => {
    let mock: MockServices;
    let app: Hono;
    let engine: Engine;
    let server: Listening;
    let close: () => Promise<void>;

    const call = async (method: string, path: string, body?: unknown) => {
      const res = await app.fetch(
        new Request(`http://api${path}`, {
          method,
          headers: { 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      );
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    };
    const save = async (definition: unknown) => {
      const res = await call('POST', '/workflows', definition);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.id as string;
    };
    const trigger = () => ({
      services: mock.url,
      content: '# Results\nRevenue grew 12 %.\n\n# Plan\nShip it.',
      title: 'Q3',
    });
    const execute = async (wid: string, data: object = trigger()) =>
      (await call('POST', `/workflows/${wid}/execute`, { trigger_data: data })).body.execution_id as string;
    const record = async (wid: string, eid: string) => (await call('GET', `/workflows/${wid}/executions/${eid}`)).body;
    const finished = (wid: string, eid: string) =>
      eventually(async () => {
        const body = await record(wid, eid);
        return ['success', 'partial_success', 'failed', 'cancelled'].includes(body.status) ? body : undefined;
      }, 30_000);
    const count = (method: string, path: string) => mock.calls({ method, path }).length;
    const states = async (eid: string) =>
      (await call('GET', `/runs/${eid}/events?types=state.changed&limit=1000`)).body.events.map(
        (e: any) => e.data.name,
      );

    beforeAll(async () => {
      mock = await startMockServices({ speed: 20, seed: 11 });
    });
    afterAll(() => mock.close());
    beforeEach(async () => {
      mock.reset();
      const t = await testEngine(backend, { pollMs: 100 });
      engine = t.engine;
      let handler: Hono | null = null;
      server = await listen({ fetch: (request) => handler!.fetch(request) }, { host: '127.0.0.1', port: 0 });
      const workflows = storedWorkflows(engine, {
        secretKey: randomBytes(32),
        allow: ['127.0.0.1'],
        callbackBaseUrl: server.url,
      });
      app = handler = createApp({ engine, workflows });
      close = async () => {
        await server.close();
        await t.close();
      };
    });
    afterEach(() => close());

    it('happy path: every state in order, ends DELIVERED with both artifacts', async () => {
      const wid = await save(pipelineForTests());
      const eid = await execute(wid);
      const done = await finished(wid, eid);
      expect(done).toMatchObject({ status: 'success', state: 'DELIVERED', progress: { done: 13, total: 13 } });
      expect(await states(eid)).toEqual([
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
      expect(done.steps.at(-1).output).toEqual({
        session_id: expect.stringMatching(/^sess-/),
        word: expect.stringContaining('/content'),
        powerpoint: expect.stringContaining('/content'),
      });
      expect(count('POST', '/v1/intake/sessions')).toBe(1);
      expect(count('POST', '/v1/render/documents')).toBe(1);
      expect(count('DELETE', '/v1/intake/sessions/{id}')).toBe(0);
    });

    it('503 twice on the layout request, then success: three tries with one Idempotency-Key', async () => {
      mock.setFaults([{ endpoint: 'POST /v1/layout/proposals', status: 503, times: 2 }]);
      const wid = await save(pipelineForTests());
      const done = await finished(wid, await execute(wid));
      expect(done).toMatchObject({ status: 'success', state: 'DELIVERED' });
      const posts = mock.calls({ method: 'POST', path: '/v1/layout/proposals' });
      expect(posts.map((c) => c.status)).toEqual([503, 503, 202]);
      expect(new Set(posts.map((c) => c.idempotency_key)).size).toBe(1);
      expect(done.steps.find((s: any) => s.step_id === 'layout').attempts).toBe(3);
    });

    it('422 on intake: FAILED_CONTENT_VALIDATION at once, no retry, the session deleted', async () => {
      mock.setFaults([
        {
          endpoint: 'POST /v1/intake/sessions/{id}/submit',
          status: 422,
          body: { error: { code: 'content_invalid', message: 'no text' } },
        },
      ]);
      const wid = await save(pipelineForTests());
      const done = await finished(wid, await execute(wid));
      expect(done).toMatchObject({ status: 'failed', state: 'FAILED_CONTENT_VALIDATION' });
      expect(done.steps.find((s: any) => s.step_id === 'submit')).toMatchObject({ status: 'failed', attempts: 1 });
      expect(count('POST', '/v1/intake/sessions/{id}/submit')).toBe(1);
      expect(count('DELETE', '/v1/intake/sessions/{id}')).toBe(1);
      expect(count('POST', '/v1/layout/proposals')).toBe(0);
    });

    it('layout poll timeout: FAILED_LAYOUT_GENERATION, the proposal cancelled, the session kept; a rerun with rule_only succeeds', async () => {
      mock.setFaults([{ endpoint: 'POST /v1/layout/proposals', match: { mode: 'ai' }, job: 'hang', times: 'always' }]);
      const wid = await save(pipelineForTests({ layoutMaxWait: 1 }));
      const eid = await execute(wid);
      const failed = await finished(wid, eid);
      expect(failed).toMatchObject({ status: 'failed', state: 'FAILED_LAYOUT_GENERATION' });
      expect(failed.steps.find((s: any) => s.step_id === 'layout_wait').status).toBe('timed_out');
      expect(count('POST', '/v1/layout/proposals/{id}/cancel')).toBe(1);
      // FAILED_LAYOUT_GENERATION is retryable: the session stays for the rerun
      expect(count('DELETE', '/v1/intake/sessions/{id}')).toBe(0);

      const rerun = await call('POST', `/workflows/${wid}/executions/${eid}/rerun`, {
        from_step: 'layout',
        trigger_data: { ...trigger(), mode: 'rule_only' },
      });
      expect(rerun.status).toBe(202);
      const done = await finished(wid, rerun.body.execution_id);
      expect(done).toMatchObject({
        status: 'success',
        state: 'DELIVERED',
        rerun_of: { execution_id: eid, from_step: 'layout' },
      });
      expect(
        mock.calls({ method: 'POST', path: '/v1/layout/proposals' }).map((c) => (c.body as { mode: string }).mode),
      ).toEqual(['ai', 'rule_only']);
      expect(count('POST', '/v1/intake/sessions')).toBe(1);
      expect(count('POST', '/v1/intake/sessions/{id}/submit')).toBe(1);
      expect((await record(wid, eid)).reruns).toEqual([{ execution_id: rerun.body.execution_id, from_step: 'layout' }]);
    });

    it('Word ok, PowerPoint failed: partial_success / PARTIAL_COMPLETE; retrying the PowerPoint branch succeeds without rendering Word again', async () => {
      mock.setFaults([{ endpoint: 'POST /v1/render/presentations', job: 'fail', error: 'Image asset not found' }]);
      const wid = await save(pipelineForTests());
      const eid = await execute(wid);
      const partial = await finished(wid, eid);
      expect(partial).toMatchObject({ status: 'partial_success', state: 'PARTIAL_COMPLETE' });
      expect(partial.steps.find((s: any) => s.step_id === 'render').branches).toEqual({
        word: { status: 'success', error: null },
        powerpoint: { status: 'failed', error: expect.stringContaining('Image asset not found') },
      });
      expect(partial.steps.find((s: any) => s.step_id === 'artifact_word').output.body.format).toBe('docx');

      const retry = await call('POST', `/workflows/${wid}/executions/${eid}/retry`, { branches: ['powerpoint'] });
      expect(retry.status).toBe(202);
      const done = await finished(wid, retry.body.execution_id);
      expect(done).toMatchObject({
        status: 'success',
        state: 'DELIVERED',
        rerun_of: { execution_id: eid, branches: ['powerpoint'] },
      });
      expect(count('POST', '/v1/render/documents')).toBe(1);
      expect(count('POST', '/v1/render/presentations')).toBe(2);
      expect(count('POST', '/v1/layout/proposals')).toBe(1);
      expect(done.steps.at(-1).output.word).toBe(
        partial.steps.find((s: any) => s.step_id === 'artifact_word').output.body.download_url,
      );
    });

    it('cancel mid-render: each render cancel endpoint called once, CANCELLED, the session deleted', async () => {
      mock.setFaults([{ endpoint: 'POST /v1/render/*', job: 'hang', times: 'always' }]);
      const wid = await save(pipelineForTests());
      const eid = await execute(wid);
      await eventually(async () => {
        const events = (await call('GET', `/runs/${eid}/events?types=poll.attempted&limit=1000`)).body.events.map(
          (e: any) => e.data.name,
        );
        return events.includes('wait_word') && events.includes('wait_powerpoint');
      }, 20_000);
      expect((await call('POST', `/workflows/${wid}/executions/${eid}/cancel`)).status).toBe(202);
      const done = await finished(wid, eid);
      expect(done).toMatchObject({ status: 'cancelled', state: 'CANCELLED' });
      const cancels = mock.calls({ method: 'POST', path: '/v1/render/jobs/{id}/cancel' }).map((c) => c.path);
      expect(cancels).toHaveLength(2);
      expect(new Set(cancels).size).toBe(2);
      expect(count('POST', '/v1/layout/proposals/{id}/cancel')).toBe(0);
      expect(count('DELETE', '/v1/intake/sessions/{id}')).toBe(1);
      const jobs = await Promise.all(
        cancels.map(async (path) => (await fetch(mock.url + path.replace(/\/cancel$/, ''))).json()),
      );
      expect(jobs.map((j: any) => j.status)).toEqual(['cancelled', 'cancelled']);
      // each render cancel was confirmed by a poll of its job (brief §8.1) before the execution ended
      expect(done.steps.filter((s: any) => s.cancel).map((s: any) => [s.step_id, s.cancel.status])).toEqual([
        ['wait_word', 'confirmed'],
        ['wait_powerpoint', 'confirmed'],
      ]);
    });

    it('a callback POSTed twice completes its step once', async () => {
      mock.setFaults([{ endpoint: 'POST /v1/layout/proposals', callback_copies: 2 }]);
      const base = pipelineForTests();
      const steps = base.steps.slice(0, 3);
      // the session's compensation reads the render steps (unless an artifact exists), which this cut leaves out
      delete steps[0].compensate.unless;
      steps.push({
        id: 'layout_callback',
        type: 'wait_for_callback',
        timeout_seconds: 30,
        label: 'Waiting for the layout callback…',
        config: {
          request: {
            method: 'POST',
            url: `${mock.url}/v1/layout/proposals`,
            body: {
              session_id: '{{steps.create_session.output.body.session_id}}',
              mode: 'rule_only',
              callback_url: '{{callback.url}}',
            },
          },
        },
      });
      const wid = await save({ ...base, name: 'layout-by-callback', steps });
      const eid = await execute(wid);
      const done = await finished(wid, eid);
      expect(done).toMatchObject({ status: 'success' });
      expect(done.steps.at(-1).output).toMatchObject({ status: 'complete', mode: 'rule_only' });
      // both copies were acknowledged at the first attempt (the second as a duplicate)
      const deliveries = await eventually(() =>
        mock.callbacks().length === 2 && mock.callbacks().every((c) => c.delivered) ? mock.callbacks() : undefined,
      );
      expect(deliveries.map((d) => [d.status, d.attempts])).toEqual([
        [200, 1],
        [200, 1],
      ]);
      const journal = (
        await call('GET', `/runs/${eid}/events?types=signal.sent,wait.completed&limit=100`)
      ).body.events.map((e: any) => e.type);
      expect(journal).toEqual(['signal.sent', 'wait.completed']);
    });
  },
);
