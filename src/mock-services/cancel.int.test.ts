import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { completeProposal, mockRequest as send, startMockServices, waitForStatus, type MockServices } from './index.js';

let mock: MockServices;
beforeEach(async () => {
  mock = await startMockServices({ speed: 20, seed: 4 });
});
afterEach(() => mock.close());

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** At speed 5 the work in flight lasts long enough (≥ 240 ms) for a cancel to reach it even on a loaded machine. */
async function slowServices<T>(fn: (url: string) => Promise<T>): Promise<T> {
  const slow = await startMockServices({ speed: 5, seed: 4 });
  try {
    return await fn(slow.url);
  } finally {
    await slow.close();
  }
}

describe('cancel and delete (brief §8, §9.3)', () => {
  it('cancels a processing render job for good, and a second cancel changes nothing', async () => {
    const { proposal_id } = await completeProposal(mock.url);
    mock.addFaults([{ endpoint: 'POST /v1/render/presentations', job: 'hang' }]);
    const job = await send(mock.url, 'POST', '/v1/render/presentations', { proposal_id });
    const path = `/v1/render/jobs/${job.body.render_job_id}`;
    await waitForStatus(mock.url, path, ['processing']);
    const cancelled = await send(mock.url, 'POST', `${path}/cancel`);
    expect(cancelled).toMatchObject({ status: 200, body: { status: 'cancelled', artifact_id: null } });
    expect(cancelled.body.finished_at).not.toBeNull();
    expect(await send(mock.url, 'POST', `${path}/cancel`)).toMatchObject({
      status: 200,
      body: { status: 'cancelled', finished_at: cancelled.body.finished_at },
    });
  });

  it('stops a job that has just started: it never completes', async () => {
    await slowServices(async (url) => {
      const { proposal_id } = await completeProposal(url);
      const job = await send(url, 'POST', '/v1/render/documents', { proposal_id });
      const path = `/v1/render/jobs/${job.body.render_job_id}`;
      expect((await send(url, 'POST', `${path}/cancel`)).body.status).toBe('cancelled');
      // rendering takes ≤ 3.6 s of service time, 720 ms at speed 5: wait longer
      await pause(900);
      expect((await send(url, 'GET', path)).body).toMatchObject({ status: 'cancelled', artifact_id: null });
    });
  });

  it('answers 200 to cancelling an ended job or proposal, and leaves it as it is', async () => {
    const { proposal_id } = await completeProposal(mock.url);
    expect(await send(mock.url, 'POST', `/v1/layout/proposals/${proposal_id}/cancel`)).toMatchObject({
      status: 200,
      body: { status: 'complete', progress: 100 },
    });
    expect((await send(mock.url, 'GET', `/v1/layout/proposals/${proposal_id}/spec`)).status).toBe(200);
    mock.addFaults([{ endpoint: 'POST /v1/render/documents', job: 'fail', error: 'boom' }]);
    const job = await send(mock.url, 'POST', '/v1/render/documents', { proposal_id });
    await waitForStatus(mock.url, `/v1/render/jobs/${job.body.render_job_id}`, ['failed']);
    expect(await send(mock.url, 'POST', `/v1/render/jobs/${job.body.render_job_id}/cancel`)).toMatchObject({
      status: 200,
      body: { status: 'failed', error: 'boom' },
    });
  });

  it('cancels a proposal being generated', async () => {
    const { session_id } = await completeProposal(mock.url);
    mock.addFaults([{ endpoint: 'POST /v1/layout/proposals', job: 'hang' }]);
    const proposal = await send(mock.url, 'POST', '/v1/layout/proposals', { session_id });
    await waitForStatus(mock.url, `/v1/layout/proposals/${proposal.body.proposal_id}`, ['processing']);
    expect((await send(mock.url, 'GET', `/v1/layout/proposals/${proposal.body.proposal_id}/spec`)).status).toBe(409);
    expect((await send(mock.url, 'POST', `/v1/layout/proposals/${proposal.body.proposal_id}/cancel`)).body.status).toBe(
      'cancelled',
    );
    expect(await send(mock.url, 'GET', `/v1/layout/proposals/${proposal.body.proposal_id}/spec`)).toMatchObject({
      status: 409,
      body: { error: { code: 'proposal_not_complete' } },
    });
  });

  it('cancels a normalizing session; a ready one stays ready', async () => {
    await slowServices(async (url) => {
      const draft = await send(url, 'POST', '/v1/intake/sessions', { content: 'x' });
      const sid = draft.body.session_id;
      await send(url, 'POST', `/v1/intake/sessions/${sid}/submit`);
      expect((await send(url, 'POST', `/v1/intake/sessions/${sid}/cancel`)).body.status).toBe('cancelled');
      await pause(500); // normalization is ≤ 1.8 s of service time, 360 ms at speed 5
      expect((await send(url, 'GET', `/v1/intake/sessions/${sid}`)).body).toMatchObject({
        status: 'cancelled',
        cip: null,
      });
    });
    const { session_id } = await completeProposal(mock.url);
    expect(await send(mock.url, 'POST', `/v1/intake/sessions/${session_id}/cancel`)).toMatchObject({
      status: 200,
      body: { status: 'ready' },
    });
  });

  it('deletes a session once: 204, then 404', async () => {
    const draft = await send(mock.url, 'POST', '/v1/intake/sessions', { content: 'x' });
    const path = `/v1/intake/sessions/${draft.body.session_id}`;
    await send(mock.url, 'POST', `${path}/submit`);
    const deleted = await send(mock.url, 'DELETE', path);
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();
    expect((await send(mock.url, 'DELETE', path)).status).toBe(404);
    expect((await send(mock.url, 'GET', path)).status).toBe(404);
    expect((await send(mock.url, 'POST', `${path}/cancel`)).status).toBe(404);
    expect(mock.calls({ method: 'DELETE' }).map((c) => c.status)).toEqual([204, 404]);
  });

  it('cancels asynchronously with a cancel fault: 202, cancelling for N polls, then cancelled (§8.1)', async () => {
    const { proposal_id } = await completeProposal(mock.url);
    mock.addFaults([
      { endpoint: 'POST /v1/render/documents', job: 'hang' },
      { endpoint: 'POST /v1/render/jobs/{id}/cancel', cancel: 'async', cancelling_polls: 2 },
    ]);
    const job = await send(mock.url, 'POST', '/v1/render/documents', { proposal_id });
    const path = `/v1/render/jobs/${job.body.render_job_id}`;
    await waitForStatus(mock.url, path, ['processing']);
    expect(await send(mock.url, 'POST', `${path}/cancel`)).toMatchObject({
      status: 202,
      body: { status: 'cancelling', finished_at: null },
    });
    // a repeat cancel while it is cancelling is accepted again and changes nothing (§9.3)
    expect(await send(mock.url, 'POST', `${path}/cancel`)).toMatchObject({
      status: 202,
      body: { status: 'cancelling' },
    });
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push((await send(mock.url, 'GET', path)).body.status);
    expect(seen).toEqual(['cancelling', 'cancelling', 'cancelled', 'cancelled']);
    expect(await send(mock.url, 'POST', `${path}/cancel`)).toMatchObject({
      status: 200,
      body: { status: 'cancelled' },
    });
  });

  it('cancels a proposal after cancelling_ms of service time, and never with cancel "never"', async () => {
    const { session_id } = await completeProposal(mock.url);
    mock.addFaults([
      { endpoint: 'POST /v1/layout/proposals', job: 'hang', times: 2 },
      { endpoint: 'POST /v1/layout/proposals/{id}/cancel', cancel: 'async', cancelling_ms: 40_000 },
      { endpoint: 'POST /v1/layout/proposals/{id}/cancel', cancel: 'never' },
    ]);
    const paths = [];
    for (let i = 0; i < 2; i++) {
      const proposal = await send(mock.url, 'POST', '/v1/layout/proposals', { session_id });
      paths.push(`/v1/layout/proposals/${proposal.body.proposal_id}`);
    }
    for (const path of paths) {
      await waitForStatus(mock.url, path, ['processing']);
      expect((await send(mock.url, 'POST', `${path}/cancel`)).status).toBe(202);
    }
    // 40 s of service time is 2 s at speed 20: cancelling first, cancelled without another cancel
    const seen: string[] = [];
    await waitForStatus(mock.url, paths[0]!, ['cancelled'], { seen });
    expect(seen).toEqual(['cancelling', 'cancelled']);
    for (let i = 0; i < 3; i++) expect((await send(mock.url, 'GET', paths[1]!)).body.status).toBe('cancelling');
    expect(mock.faults()).toEqual([]);
  });

  it('answers 404 to cancelling what does not exist', async () => {
    for (const path of [
      '/v1/intake/sessions/sess-x/cancel',
      '/v1/layout/proposals/lsp-x/cancel',
      '/v1/render/jobs/job-x/cancel',
    ]) {
      expect((await send(mock.url, 'POST', path)).status, path).toBe(404);
    }
  });
});
