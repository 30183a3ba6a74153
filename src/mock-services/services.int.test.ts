import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { completeProposal, mockRequest as send, startMockServices, waitForStatus, type MockServices } from './index.js';

let mock: MockServices;
beforeEach(async () => {
  mock = await startMockServices({ speed: 20, seed: 1 });
});
afterEach(() => mock.close());

/** `seen` is `expected` with some middle states possibly missed between two polls, in this order. */
function inOrder(seen: string[], expected: string[]) {
  expect(seen.at(-1)).toBe(expected.at(-1));
  let at = 0;
  for (const status of seen) {
    const found = expected.indexOf(status, at);
    expect(found, `${status} out of order in ${seen.join(' → ')}`).toBeGreaterThanOrEqual(0);
    at = found;
  }
}

describe('the happy path of brief §10.1', () => {
  it('walks a session, a proposal, a Word and a PowerPoint job to their artifacts', async () => {
    const created = await send(mock.url, 'POST', '/v1/intake/sessions', {
      title: 'Q3 report',
      intent: 'board deck',
      content: [{ heading: 'Intro', text: 'Sales grew.' }, { text: 'Costs fell a lot.' }],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      session_id: expect.stringMatching(/^sess-[0-9a-f]{8}$/),
      status: 'draft',
      title: 'Q3 report',
      intent: 'board deck',
      cip: null,
    });
    const sid = created.body.session_id;
    expect(created.headers.get('location')).toBe(`/v1/intake/sessions/${sid}`);

    const submitted = await send(mock.url, 'POST', `/v1/intake/sessions/${sid}/submit`);
    expect(submitted.status).toBe(202);
    expect(submitted.body.status).toBe('normalizing');
    const seenSession: string[] = [];
    const ready = await waitForStatus(mock.url, `/v1/intake/sessions/${sid}`, ['ready', 'failed'], {
      seen: seenSession,
    });
    inOrder(seenSession, ['normalizing', 'ready']);
    expect(ready.cip).toMatchObject({
      cip_id: expect.stringMatching(/^cip-/),
      title: 'Q3 report',
      word_count: 6,
      sections: [
        { heading: 'Intro', text: 'Sales grew.', words: 2 },
        { heading: null, text: 'Costs fell a lot.', words: 4 },
      ],
    });
    expect(ready.ready_at).not.toBeNull();

    const proposed = await send(mock.url, 'POST', '/v1/layout/proposals', { session_id: sid });
    expect(proposed.status).toBe(202);
    expect(proposed.body).toMatchObject({
      proposal_id: expect.stringMatching(/^lsp-/),
      status: 'queued',
      mode: 'ai',
      progress: 0,
    });
    const pid = proposed.body.proposal_id;
    expect(proposed.headers.get('location')).toBe(`/v1/layout/proposals/${pid}`);
    const seenLayout: string[] = [];
    const layout = await waitForStatus(mock.url, `/v1/layout/proposals/${pid}`, ['complete', 'failed'], {
      seen: seenLayout,
    });
    inOrder(seenLayout, ['queued', 'processing', 'complete']);
    expect(layout).toMatchObject({ progress: 100, error: null });
    const spec = await send(mock.url, 'GET', `/v1/layout/proposals/${pid}/spec`);
    expect(spec.status).toBe(200);
    expect(spec.body).toMatchObject({
      lsp_version: '1.0',
      proposal_id: pid,
      session_id: sid,
      pages: [
        { index: 1, layout: 'title', title: 'Q3 report' },
        { index: 2, title: 'Intro' },
        { index: 3, title: null },
      ],
    });

    const word = await send(mock.url, 'POST', '/v1/render/documents', { lsp: spec.body });
    const ppt = await send(mock.url, 'POST', '/v1/render/presentations', { proposal_id: pid });
    expect([word.status, ppt.status]).toEqual([202, 202]);
    expect(word.body).toMatchObject({
      render_job_id: expect.stringMatching(/^job-/),
      status: 'queued',
      format: 'docx',
      proposal_id: pid,
      artifact_id: null,
    });
    expect(ppt.body).toMatchObject({ status: 'queued', format: 'pptx' });
    expect(ppt.headers.get('location')).toBe(`/v1/render/jobs/${ppt.body.render_job_id}`);
    for (const [job, format, type] of [
      [word.body, 'docx', 'wordprocessingml'],
      [ppt.body, 'pptx', 'presentationml'],
    ] as const) {
      const seen: string[] = [];
      const done = await waitForStatus(mock.url, `/v1/render/jobs/${job.render_job_id}`, ['complete', 'failed'], {
        seen,
      });
      inOrder(seen, ['queued', 'processing', 'complete']);
      expect(done.artifact_id).toMatch(/^art-/);
      const artifact = await send(mock.url, 'GET', `/v1/artifacts/${done.artifact_id}`);
      expect(artifact.status).toBe(200);
      expect(artifact.body).toMatchObject({
        render_job_id: job.render_job_id,
        format,
        content_type: expect.stringContaining(type),
        download_url: `${mock.url}/v1/artifacts/${done.artifact_id}/content`,
      });
      const file = await fetch(artifact.body.download_url);
      expect(file.headers.get('content-type')).toContain(type);
      const bytes = await file.text();
      expect(bytes).toContain(`${format} rendered by ${job.render_job_id}: 3 page(s)`);
      expect(bytes.length).toBe(artifact.body.size_bytes);
    }
  });

  it("takes the brief's time divided by speed", async () => {
    const slow = await startMockServices({ speed: 2, seed: 1 });
    try {
      const created = await send(slow.url, 'POST', '/v1/intake/sessions', { content: 'x' });
      const started = Date.now();
      await send(slow.url, 'POST', `/v1/intake/sessions/${created.body.session_id}/submit`);
      await waitForStatus(slow.url, `/v1/intake/sessions/${created.body.session_id}`, ['ready']);
      // normalization is 1.5 s ± 20 % of service time: at speed 2, at least 600 ms of real time
      expect(Date.now() - started).toBeGreaterThanOrEqual(590);
    } finally {
      await slow.close();
    }
  });

  it("renders with the rule_only mode (the brief's retry after an AI failure)", async () => {
    const { session_id } = await completeProposal(mock.url);
    const rule = await send(mock.url, 'POST', '/v1/layout/proposals', { session_id, mode: 'rule_only' });
    expect(rule.body.mode).toBe('rule_only');
    await waitForStatus(mock.url, `/v1/layout/proposals/${rule.body.proposal_id}`, ['complete']);
    const spec = await send(mock.url, 'GET', `/v1/layout/proposals/${rule.body.proposal_id}/spec`);
    expect(spec.body.pages.slice(1).every((p: { layout: string }) => p.layout === 'title_and_body')).toBe(true);
  });
});

describe('bad requests', () => {
  it('answers 4xx naming the field, and changes nothing', async () => {
    const empty = await send(mock.url, 'POST', '/v1/intake/sessions', {});
    const sid = empty.body.session_id;
    expect(await send(mock.url, 'POST', `/v1/intake/sessions/${sid}/submit`, { content: '   ' })).toMatchObject({
      status: 422,
      body: { error: { code: 'content_invalid', field: 'content' } },
    });
    expect((await send(mock.url, 'GET', `/v1/intake/sessions/${sid}`)).body.status).toBe('draft');
    expect(await send(mock.url, 'POST', '/v1/intake/sessions', { content: [{ heading: 1 }] })).toMatchObject({
      status: 422,
      body: { error: { field: 'content[0]' } },
    });
    expect(await send(mock.url, 'POST', '/v1/intake/sessions', { title: 5 })).toMatchObject({
      status: 422,
      body: { error: { field: 'title' } },
    });
    expect(await send(mock.url, 'POST', '/v1/intake/sessions', [1])).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_body' } },
    });
    const raw = await fetch(`${mock.url}/v1/intake/sessions`, { method: 'POST', body: '{nope' });
    expect(raw.status).toBe(400);
    expect(
      await send(mock.url, 'POST', '/v1/intake/sessions', { callback_url: 'http://example.com/hook' }),
    ).toMatchObject({ status: 422, body: { error: { field: 'callback_url' } } });

    expect(await send(mock.url, 'POST', '/v1/layout/proposals', {})).toMatchObject({
      status: 422,
      body: { error: { field: 'session_id' } },
    });
    expect(await send(mock.url, 'POST', '/v1/layout/proposals', { session_id: 'sess-nope' })).toMatchObject({
      status: 422,
      body: { error: { code: 'session_not_found' } },
    });
    expect(await send(mock.url, 'POST', '/v1/layout/proposals', { session_id: sid })).toMatchObject({
      status: 409,
      body: { error: { code: 'session_not_ready' } },
    });
    expect(await send(mock.url, 'POST', '/v1/render/documents', {})).toMatchObject({
      status: 422,
      body: { error: { field: 'proposal_id' } },
    });
    expect(await send(mock.url, 'POST', '/v1/render/documents', { lsp: { pages: 'x' } })).toMatchObject({
      status: 422,
      body: { error: { field: 'lsp.pages' } },
    });
    expect(mock.calls({ path: '/v1/render/documents' }).map((c) => c.status)).toEqual([422, 422]);
  });

  it('submits a draft once: a second submit is a 409', async () => {
    const created = await send(mock.url, 'POST', '/v1/intake/sessions', { content: 'hello' });
    const sid = created.body.session_id;
    expect((await send(mock.url, 'POST', `/v1/intake/sessions/${sid}/submit`)).status).toBe(202);
    expect(await send(mock.url, 'POST', `/v1/intake/sessions/${sid}/submit`)).toMatchObject({
      status: 409,
      body: { error: { code: 'session_not_draft' } },
    });
  });

  it('answers 404 for unknown ids and paths, 405 for a wrong method', async () => {
    for (const path of [
      '/v1/intake/sessions/sess-x',
      '/v1/layout/proposals/lsp-x',
      '/v1/layout/proposals/lsp-x/spec',
      '/v1/render/jobs/job-x',
      '/v1/artifacts/art-x',
      '/v1/artifacts/art-x/content',
      '/v2/nothing',
    ]) {
      expect((await send(mock.url, 'GET', path)).status, path).toBe(404);
    }
    expect(await send(mock.url, 'PUT', '/v1/render/jobs/job-x')).toMatchObject({
      status: 405,
      body: { error: { message: '/v1/render/jobs/job-x answers GET' } },
    });
  });

  it('lists its endpoints at /', async () => {
    const root = await send(mock.url, 'GET', '/');
    expect(root.body.endpoints).toEqual(mock.endpoints);
    expect(mock.endpoints.map((e) => `${e.method} ${e.path}`)).toContain('POST /v1/render/jobs/{render_job_id}/cancel');
  });
});
