import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { backends } from '../src/testing/backends.js';
import { pipelineWithFallback } from './fallback-pipeline.js';
import { pipelineHarness, type PipelineHarness } from './pipeline-harness.js';

describe.each(backends)('the automatic fallback (brief 004 §6.2, §7.2: on_failure) on $name', (backend) => {
  let mock: MockServices;
  let h: PipelineHarness;
  const trigger = () => ({ services: mock.url, content: '# Results\nRevenue grew 12 %.', title: 'Q3' });
  const layoutModes = () =>
    mock.calls({ method: 'POST', path: '/v1/layout/proposals' }).map((c) => (c.body as { mode: string }).mode);

  beforeAll(async () => {
    mock = await startMockServices({ speed: 20, seed: 11 });
  });
  afterAll(() => mock.close());
  beforeEach(async () => {
    mock.reset();
    h = await pipelineHarness(backend, mock);
  });
  afterEach(() => h.close());

  it('the AI layout fails: the engine reruns from layout with mode rule_only, journaled as the fallback, and it succeeds', async () => {
    mock.setFaults([
      {
        endpoint: 'POST /v1/layout/proposals',
        match: { mode: 'ai' },
        job: 'fail',
        error: 'AI timeout',
        times: 'always',
      },
    ]);
    const wid = await h.save(pipelineWithFallback());
    const eid = await h.execute(wid, trigger());
    const failed = await h.finished(wid, eid);
    expect(failed).toMatchObject({ status: 'failed', state: 'FAILED_LAYOUT_GENERATION' });
    // started in the transaction that journaled the failure: the link is there as soon as the failure is
    const fallback = { rule: 'on_failure', attempt: 1, max: 1 };
    expect(failed.reruns).toEqual([{ execution_id: expect.stringMatching(/^ex_/), from_step: 'layout', fallback }]);
    const rid = failed.reruns[0].execution_id;
    const done = await h.finished(wid, rid);
    expect(done).toMatchObject({
      status: 'success',
      state: 'DELIVERED',
      trigger_data: { ...trigger(), mode: 'rule_only' },
      rerun_of: { execution_id: eid, from_step: 'layout', fallback },
    });
    expect(layoutModes()).toEqual(['ai', 'rule_only']);
    // the steps before layout were reused, not run again
    expect(h.count('POST', '/v1/intake/sessions')).toBe(1);
    expect(h.count('POST', '/v1/intake/sessions/{id}/submit')).toBe(1);
    expect((await h.call('GET', `/workflows/${wid}/executions`)).body.count).toBe(2);
    // the rerun's first event carries the link: the journal says the engine started it, and by which rule
    const started = (await h.call('GET', `/runs/${rid}/events?types=run.started&limit=1`)).body.events[0];
    expect(started.data.input.rerun_of).toEqual({ execution_id: eid, from_step: 'layout', fallback });
  });

  it('a layout that timed out is rerun automatically with a longer timeout (§7.2), journaled as such', async () => {
    mock.setFaults([{ endpoint: 'POST /v1/layout/proposals', job: 'hang', times: 1 }]);
    const wid = await h.save(pipelineWithFallback({ trigger_data: undefined, timeouts: { layout_wait: '2m' } }, 1));
    const eid = await h.execute(wid, trigger());
    const failed = await h.finished(wid, eid);
    expect(failed).toMatchObject({ status: 'failed', state: 'FAILED_LAYOUT_GENERATION' });
    expect(failed.steps.find((s: any) => s.step_id === 'layout_wait').status).toBe('timed_out');
    const link = {
      execution_id: eid,
      from_step: 'layout',
      timeouts_seconds: { layout_wait: 120 },
      fallback: { rule: 'on_failure', attempt: 1, max: 1 },
    };
    const done = await h.finished(wid, failed.reruns[0].execution_id);
    expect(done).toMatchObject({ status: 'success', state: 'DELIVERED', trigger_data: trigger(), rerun_of: link });
    expect(layoutModes()).toEqual(['ai', 'ai']);
  });

  it('a fallback that fails again stops after max reruns', async () => {
    mock.setFaults([{ endpoint: 'POST /v1/layout/proposals', job: 'fail', error: 'no layout', times: 'always' }]);
    const wid = await h.save(pipelineWithFallback({ max: 2 }));
    const eid = await h.execute(wid, trigger());
    const chain = [await h.finished(wid, eid)];
    while (chain.at(-1).reruns.length > 0) chain.push(await h.finished(wid, chain.at(-1).reruns[0].execution_id));
    expect(chain.map((r) => [r.status, r.state])).toEqual([
      ['failed', 'FAILED_LAYOUT_GENERATION'],
      ['failed', 'FAILED_LAYOUT_GENERATION'],
      ['failed', 'FAILED_LAYOUT_GENERATION'],
    ]);
    expect(chain.map((r) => r.rerun_of?.fallback ?? null)).toEqual([
      null,
      { rule: 'on_failure', attempt: 1, max: 2 },
      { rule: 'on_failure', attempt: 2, max: 2 },
    ]);
    expect(layoutModes()).toEqual(['ai', 'rule_only', 'rule_only']);
    expect((await h.call('GET', `/workflows/${wid}/executions`)).body.count).toBe(3);
  });

  it('a failure outside the rule (its states, its when) starts nothing; a manual rerun still can', async () => {
    mock.setFaults([
      {
        endpoint: 'POST /v1/intake/sessions/{id}/submit',
        status: 422,
        body: { error: { code: 'content_invalid', message: 'no text' } },
        times: 2,
      },
    ]);
    // FAILED_CONTENT_VALIDATION is not in its states; layout_wait, which never ran, has no error for its when
    const byState = await h.save(pipelineWithFallback({ rerun_from: 'create_session', when: undefined }));
    const byWhen = await h.save({
      ...pipelineWithFallback({ rerun_from: 'create_session', states: undefined }),
      name: 'by-when',
    });
    const failed = await h.finished(byState, await h.execute(byState, trigger()));
    expect(failed).toMatchObject({ status: 'failed', state: 'FAILED_CONTENT_VALIDATION', reruns: [] });
    const eid = failed.execution_id;
    expect(await h.finished(byWhen, await h.execute(byWhen, trigger()))).toMatchObject({
      status: 'failed',
      state: 'FAILED_CONTENT_VALIDATION',
      reruns: [],
    });
    const manual = await h.call('POST', `/workflows/${byState}/executions/${eid}/rerun`, {});
    expect(manual.status).toBe(202);
    const done = await h.finished(byState, manual.body.execution_id);
    expect(done).toMatchObject({ status: 'success', rerun_of: { execution_id: eid, from_step: 'create_session' } });
    expect(done.rerun_of.fallback).toBeUndefined();
  });

  it('refuses a bad rule at save time with a 400 naming the field', async () => {
    const unknown = await h.call('POST', '/workflows', pipelineWithFallback({ rerun_from: 'layuot' }));
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain('on_failure.rerun_from');
    const tooMany = await h.call('POST', '/workflows', pipelineWithFallback({ max: 9 }));
    expect(tooMany.status).toBe(400);
    expect(JSON.stringify(tooMany.body)).toContain('on_failure.max');
    expect(JSON.stringify(tooMany.body)).toContain('at most 5');
  });
});
