import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { completeProposal, mockRequest as send, startMockServices, waitForStatus, type MockServices } from './index.js';

let mock: MockServices;
beforeEach(async () => {
  mock = await startMockServices({ speed: 20, seed: 3 });
});
afterEach(() => mock.close());

describe('fault rules', () => {
  it('answers a status N times, then lets requests through', async () => {
    const added = await send(mock.url, 'POST', '/_faults', {
      endpoint: 'POST /v1/intake/sessions',
      status: 503,
      times: 2,
    });
    expect(added).toMatchObject({ status: 201, body: { faults: [{ id: 'fault-1', remaining: 2, used: 0 }] } });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await send(mock.url, 'POST', '/v1/intake/sessions', {})).status);
    expect(statuses).toEqual([503, 503, 201]);
    expect(mock.calls().map((c) => c.fault)).toEqual(['fault-1', 'fault-1', null]);
    expect((await send(mock.url, 'GET', '/_faults')).body.faults).toEqual([]);
  });

  it('answers 422 once with the given body, the service untouched', async () => {
    const draft = await send(mock.url, 'POST', '/v1/intake/sessions', { content: 'fine' });
    const path = `/v1/intake/sessions/${draft.body.session_id}/submit`;
    mock.addFaults([
      {
        endpoint: 'POST /v1/intake/sessions/{id}/submit',
        status: 422,
        body: { error: { code: 'content_invalid', message: 'no text' } },
      },
    ]);
    expect(await send(mock.url, 'POST', path)).toMatchObject({
      status: 422,
      body: { error: { code: 'content_invalid', message: 'no text' } },
    });
    expect((await send(mock.url, 'GET', `/v1/intake/sessions/${draft.body.session_id}`)).body.status).toBe('draft');
    expect((await send(mock.url, 'POST', path)).status).toBe(202);
  });

  it('answers 429 with Retry-After', async () => {
    mock.addFaults([{ endpoint: 'GET /v1/render/jobs/{id}', status: 429, retry_after: 2 }]);
    const limited = await send(mock.url, 'GET', '/v1/render/jobs/job-1');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect(limited.body.error.code).toBe('injected_fault');
    expect((await send(mock.url, 'GET', '/v1/render/jobs/job-1')).status).toBe(404);
  });

  it('delays an answer', async () => {
    mock.addFaults([{ endpoint: 'GET /v1/intake/sessions/{id}', delay_ms: 300 }]);
    const started = Date.now();
    expect((await send(mock.url, 'GET', '/v1/intake/sessions/sess-1')).status).toBe(404);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(mock.calls()[0]!.ms).toBeGreaterThanOrEqual(290);
  });

  it('drops the connection after doing the work', async () => {
    mock.addFaults([{ endpoint: 'POST /v1/intake/sessions', drop: true }]);
    await expect(send(mock.url, 'POST', '/v1/intake/sessions', { content: 'x' })).rejects.toThrow();
    const [call] = mock.calls();
    expect(call).toMatchObject({ status: null, dropped: true, fault: 'fault-1' });
    expect((await send(mock.url, 'POST', '/v1/intake/sessions', {})).body.session_id).not.toBeUndefined();
  });

  it('ends a job failed with the given error (brief §10.3: Word complete, PowerPoint failed)', async () => {
    const { proposal_id } = await completeProposal(mock.url);
    mock.addFaults([{ endpoint: 'POST /v1/render/presentations', job: 'fail', error: 'Image asset not found' }]);
    const word = await send(mock.url, 'POST', '/v1/render/documents', { proposal_id });
    const ppt = await send(mock.url, 'POST', '/v1/render/presentations', { proposal_id });
    expect(ppt.status).toBe(202);
    const seen: string[] = [];
    const failed = await waitForStatus(mock.url, `/v1/render/jobs/${ppt.body.render_job_id}`, ['complete', 'failed'], {
      seen,
    });
    expect(failed).toMatchObject({ status: 'failed', error: 'Image asset not found', artifact_id: null });
    expect(seen.at(-1)).toBe('failed');
    expect(
      (await waitForStatus(mock.url, `/v1/render/jobs/${word.body.render_job_id}`, ['complete', 'failed'])).status,
    ).toBe('complete');
    // the retry of the PowerPoint with the same LSP succeeds
    const retry = await send(mock.url, 'POST', '/v1/render/presentations', { proposal_id });
    expect(
      (await waitForStatus(mock.url, `/v1/render/jobs/${retry.body.render_job_id}`, ['complete', 'failed'])).status,
    ).toBe('complete');
  });

  it('fails a normalization', async () => {
    mock.addFaults([{ endpoint: 'POST /v1/intake/sessions/{id}/submit', job: 'fail', error: 'unreadable' }]);
    const draft = await send(mock.url, 'POST', '/v1/intake/sessions', { content: 'x' });
    await send(mock.url, 'POST', `/v1/intake/sessions/${draft.body.session_id}/submit`);
    expect(
      await waitForStatus(mock.url, `/v1/intake/sessions/${draft.body.session_id}`, ['ready', 'failed']),
    ).toMatchObject({ status: 'failed', error: 'unreadable', cip: null });
  });

  it('leaves a job processing for ever, only when the body matches (the AI mode hangs, rule_only works)', async () => {
    const { session_id } = await completeProposal(mock.url);
    mock.addFaults([{ endpoint: 'POST /v1/layout/proposals', match: { mode: 'ai' }, job: 'hang', times: 'always' }]);
    const ai = await send(mock.url, 'POST', '/v1/layout/proposals', { session_id, mode: 'ai' });
    const rule = await send(mock.url, 'POST', '/v1/layout/proposals', { session_id, mode: 'rule_only' });
    await waitForStatus(mock.url, `/v1/layout/proposals/${ai.body.proposal_id}`, ['processing']);
    expect((await waitForStatus(mock.url, `/v1/layout/proposals/${rule.body.proposal_id}`, ['complete'])).status).toBe(
      'complete',
    );
    // rule_only takes ~1.5 s and ai ~3.5 s of service time: give the ai proposal 3× that
    await new Promise((resolve) => setTimeout(resolve, (3 * 4000) / 20));
    expect((await send(mock.url, 'GET', `/v1/layout/proposals/${ai.body.proposal_id}`)).body).toMatchObject({
      status: 'processing',
      finished_at: null,
    });
    expect(mock.faults()).toMatchObject([{ remaining: null, used: 1 }]);
  });

  it('applies the first matching rule; PUT replaces, DELETE removes', async () => {
    mock.addFaults([
      { endpoint: '* /v1/artifacts/{id}', status: 500, times: 'always' },
      { endpoint: 'GET /v1/artifacts/{id}', status: 502 },
    ]);
    expect((await send(mock.url, 'GET', '/v1/artifacts/a')).status).toBe(500);
    expect(
      (await send(mock.url, 'PUT', '/_faults', [{ endpoint: 'GET /v1/artifacts/*', status: 504 }])).body.faults,
    ).toMatchObject([{ id: 'fault-3' }]);
    expect((await send(mock.url, 'GET', '/v1/artifacts/a')).status).toBe(504);
    mock.addFaults([{ endpoint: 'GET /v1/artifacts/{id}', status: 503, times: 5 }]);
    expect((await send(mock.url, 'DELETE', '/_faults')).body.faults).toEqual([]);
    expect((await send(mock.url, 'GET', '/v1/artifacts/a')).status).toBe(404);
  });

  it('rejects a bad rule with a 422 naming the field, adding none of the list', async () => {
    const bad = await send(mock.url, 'POST', '/_faults', {
      rules: [
        { endpoint: 'GET /x', status: 503 },
        { endpoint: 'GET /x', status: 200 },
      ],
    });
    expect(bad).toMatchObject({ status: 422, body: { error: { code: 'invalid_fault', field: 'rules[1].status' } } });
    expect(mock.faults()).toEqual([]);
    expect(() => mock.setFaults([{ endpoint: 'fetch /x', status: 503 }])).toThrow(/rules\[0\]\.endpoint/);
  });
});
