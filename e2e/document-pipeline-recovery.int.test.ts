import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { pipelineForTests } from './pipeline.js';
import { pipelineHarness, type PipelineHarness } from './pipeline-harness.js';

describe.each(backends)(
  'the document pipeline recovering from failures (brief 004 §6.1, §8.2) against the mock services on $name',
  (backend) => {
    let mock: MockServices;
    let h: PipelineHarness;
    const trigger = () => ({ services: mock.url, content: '# Results\nRevenue grew 12 %.', title: 'Q3' });

    beforeAll(async () => {
      mock = await startMockServices({ speed: 20, seed: 12 });
    });
    afterAll(() => mock.close());
    beforeEach(async () => {
      mock.reset();
      h = await pipelineHarness(backend, mock);
    });
    afterEach(() => h.close());

    it('§6.1 both formats fail: failed in FAILED_RENDERING, both marked failed, the session kept; a retry of both renders each once more and delivers', async () => {
      mock.setFaults([
        { endpoint: 'POST /v1/render/documents', job: 'fail', error: 'Font not embeddable' },
        { endpoint: 'POST /v1/render/presentations', job: 'fail', error: 'Image asset not found' },
      ]);
      const wid = await h.save(pipelineForTests());
      const eid = await h.execute(wid, trigger());
      const failed = await h.finished(wid, eid);
      expect(failed).toMatchObject({ status: 'failed', state: 'FAILED_RENDERING' });
      expect(failed.steps.find((s: any) => s.step_id === 'render').branches).toEqual({
        word: { status: 'failed', error: expect.stringContaining('Font not embeddable') },
        powerpoint: { status: 'failed', error: expect.stringContaining('Image asset not found') },
      });
      // FAILED_RENDERING is retryable: nothing is compensated, the layout stays for the retry
      expect(h.count('DELETE', '/v1/intake/sessions/{id}')).toBe(0);

      const retry = await h.call('POST', `/workflows/${wid}/executions/${eid}/retry`, {});
      expect(retry.status, JSON.stringify(retry.body)).toBe(202);
      expect(retry.body.branches).toEqual(['word', 'powerpoint']);
      const done = await h.finished(wid, retry.body.execution_id);
      expect(done).toMatchObject({
        status: 'success',
        state: 'DELIVERED',
        rerun_of: { execution_id: eid, branches: ['word', 'powerpoint'] },
      });
      expect(h.count('POST', '/v1/render/documents')).toBe(2);
      expect(h.count('POST', '/v1/render/presentations')).toBe(2);
      expect(h.count('POST', '/v1/layout/proposals')).toBe(1);
      expect(h.count('POST', '/v1/intake/sessions')).toBe(1);
      expect(done.steps.at(-1).output).toEqual({
        session_id: expect.stringMatching(/^sess-/),
        word: expect.stringContaining('/content'),
        powerpoint: expect.stringContaining('/content'),
      });
    });

    const compensations = async (eid: string) =>
      (await h.call('GET', `/runs/${eid}/events?types=compensation.completed&limit=100`)).body.events.map(
        (e: any) => e.data,
      );
    const cancelWhen = async (wid: string, eid: string, ready: (record: any) => boolean) => {
      await eventually(async () => ready(await h.record(wid, eid)), 20_000);
      expect((await h.call('POST', `/workflows/${wid}/executions/${eid}/cancel`)).status).toBe(202);
      return h.finished(wid, eid);
    };
    const step = (record: any, id: string) => record.steps.find((s: any) => s.step_id === id);

    it('§8.2 cancelled after the Word artifact was made: the session is kept, its compensation journaled as skipped with the reason', async () => {
      mock.setFaults([{ endpoint: 'POST /v1/render/presentations', job: 'hang', times: 'always' }]);
      const wid = await h.save(pipelineForTests());
      const eid = await h.execute(wid, trigger());
      const done = await cancelWhen(wid, eid, (r) => step(r, 'wait_word').status === 'success');
      expect(done).toMatchObject({ status: 'cancelled', state: 'CANCELLED' });
      expect(h.count('DELETE', '/v1/intake/sessions/{id}')).toBe(0);
      const artifact = step(done, 'wait_word').output.body.artifact_id;
      expect(await compensations(eid)).toContainEqual(
        expect.objectContaining({
          name: 'create_session',
          skipped: expect.stringMatching(new RegExp(`^unless: .* is "${artifact}"$`)),
        }),
      );
    });

    it('§8.2 cancelled before any artifact: the session is deleted, nothing skipped', async () => {
      mock.setFaults([{ endpoint: 'POST /v1/render/*', job: 'hang', times: 'always' }]);
      const wid = await h.save(pipelineForTests());
      const eid = await h.execute(wid, trigger());
      const done = await cancelWhen(
        wid,
        eid,
        (r) => step(r, 'wait_word').status === 'running' && step(r, 'wait_powerpoint').status === 'running',
      );
      expect(done).toMatchObject({ status: 'cancelled', state: 'CANCELLED' });
      expect(h.count('DELETE', '/v1/intake/sessions/{id}')).toBe(1);
      const session = (await compensations(eid)).find((c: any) => c.name === 'create_session');
      expect(session).toBeDefined();
      expect(session.skipped).toBeUndefined();
    });

    it("a cancel with a reason: journaled in run.cancel_requested and shown as the record's cancel_reason; a bad reason is a 400 naming it", async () => {
      mock.setFaults([{ endpoint: 'POST /v1/render/*', job: 'hang', times: 'always' }]);
      const wid = await h.save(pipelineForTests());
      const eid = await h.execute(wid, trigger());
      await eventually(async () => step(await h.record(wid, eid), 'wait_word').status === 'running', 20_000);
      const bad = await h.call('POST', `/workflows/${wid}/executions/${eid}/cancel`, { reason: 42 });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toContain('reason');
      expect((await h.record(wid, eid)).cancel_reason).toBeNull();
      expect(
        (await h.call('POST', `/workflows/${wid}/executions/${eid}/cancel`, { reason: 'customer withdrew the order' }))
          .status,
      ).toBe(202);
      const done = await h.finished(wid, eid);
      expect(done).toMatchObject({
        status: 'cancelled',
        state: 'CANCELLED',
        cancel_reason: 'customer withdrew the order',
      });
      const requested = (
        await h.call('GET', `/runs/${eid}/events?types=run.cancel_requested&limit=10`)
      ).body.events.map((e: any) => e.data);
      expect(requested).toEqual([{ reason: 'customer withdrew the order' }]);
    });

    it('§7.2 a layout poll that timed out, rerun with a longer timeout: the rerun polls for up to 10 min, says so in rerun_of, and delivers', async () => {
      // the first proposal never finishes, so its poll times out however fast the machine; the rerun's does
      mock.setFaults([{ endpoint: 'POST /v1/layout/proposals', job: 'hang', times: 1 }]);
      const wid = await h.save(pipelineForTests({ layoutMaxWait: 0.05 }));
      const eid = await h.execute(wid, trigger());
      const failed = await h.finished(wid, eid);
      expect(failed).toMatchObject({ status: 'failed', state: 'FAILED_LAYOUT_GENERATION' });
      expect(step(failed, 'layout_wait').status).toBe('timed_out');

      const bad = await h.call('POST', `/workflows/${wid}/executions/${eid}/rerun`, {
        from_step: 'layout',
        timeouts: { nowhere: '10m', layout_wait: 'soon', render: '1m', wait_word: '2d' },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.error.problems.map((p: any) => p.path)).toEqual([
        'timeouts.nowhere',
        'timeouts.layout_wait',
        'timeouts.render',
        'timeouts.wait_word',
      ]);

      const rerun = await h.call('POST', `/workflows/${wid}/executions/${eid}/rerun`, {
        from_step: 'layout',
        timeouts: { layout_wait: '10m' },
      });
      expect(rerun.status, JSON.stringify(rerun.body)).toBe(202);
      const done = await h.finished(wid, rerun.body.execution_id);
      expect(done).toMatchObject({
        status: 'success',
        state: 'DELIVERED',
        rerun_of: { execution_id: eid, from_step: 'layout', timeouts_seconds: { layout_wait: 600 } },
      });
      const started = (await h.call('GET', `/runs/${rerun.body.execution_id}/events?types=run.started&limit=1`)).body
        .events[0].data;
      expect(started.input.steps.find((s: any) => s.id === 'layout_wait').config.max_wait_seconds).toBe(600);
      expect(h.count('POST', '/v1/layout/proposals')).toBe(2);
    });
  },
);
