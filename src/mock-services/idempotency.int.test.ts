import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { completeProposal, mockRequest as send, startMockServices, waitForStatus, type MockServices } from './index.js';

let mock: MockServices;
beforeEach(async () => {
  mock = await startMockServices({ speed: 20, seed: 2 });
});
afterEach(() => mock.close());

const key = (k: string) => ({ 'idempotency-key': k });

describe('Idempotency-Key', () => {
  it('answers a repeat with the first response and creates nothing new', async () => {
    const body = { title: 'T', content: 'hello' };
    const first = await send(mock.url, 'POST', '/v1/intake/sessions', body, key('k-1'));
    await send(mock.url, 'POST', `/v1/intake/sessions/${first.body.session_id}/submit`);
    // same fields in another order: the same body
    const again = await send(mock.url, 'POST', '/v1/intake/sessions', { content: 'hello', title: 'T' }, key('k-1'));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // the first response as it was: the session is normalizing by now, the replay still says draft
    expect(again.body).toEqual(first.body);
    const other = await send(mock.url, 'POST', '/v1/intake/sessions', body, key('k-2'));
    expect(other.body.session_id).not.toBe(first.body.session_id);
    expect(mock.calls({ path: '/v1/intake/sessions' }).map((c) => [c.idempotency_key, c.status, c.replayed])).toEqual([
      ['k-1', 201, false],
      ['k-1', 201, true],
      ['k-2', 201, false],
    ]);
  });

  it('answers 422 to the same key with a different body', async () => {
    await send(mock.url, 'POST', '/v1/intake/sessions', { content: 'a' }, key('k'));
    const reused = await send(mock.url, 'POST', '/v1/intake/sessions', { content: 'b' }, key('k'));
    expect(reused).toMatchObject({ status: 422, body: { error: { code: 'idempotency_key_reused' } } });
  });

  it('scopes a key to its endpoint: one key per execution serves every POST', async () => {
    const { proposal_id } = await completeProposal(mock.url);
    const word = await send(mock.url, 'POST', '/v1/render/documents', { proposal_id }, key('exec-1'));
    const ppt = await send(mock.url, 'POST', '/v1/render/presentations', { proposal_id }, key('exec-1'));
    expect([word.status, ppt.status]).toEqual([202, 202]);
    expect(word.body.render_job_id).not.toBe(ppt.body.render_job_id);
    const wordAgain = await send(mock.url, 'POST', '/v1/render/documents', { proposal_id }, key('exec-1'));
    expect(wordAgain.body.render_job_id).toBe(word.body.render_job_id);
  });

  it('creates one resource when requests with one key arrive together', async () => {
    const { session_id } = await completeProposal(mock.url);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => send(mock.url, 'POST', '/v1/layout/proposals', { session_id }, key('together'))),
    );
    expect(new Set(answers.map((a) => a.body.proposal_id)).size).toBe(1);
    expect(answers.map((a) => a.status)).toEqual([202, 202, 202, 202, 202]);
    expect(mock.calls({ method: 'POST', path: '/v1/layout/proposals' }).filter((c) => !c.replayed)).toHaveLength(2); // completeProposal's and one of these
  });

  it('keeps no failure: after a 4xx or an injected 503, a retry with the key is a fresh attempt', async () => {
    const draft = await send(mock.url, 'POST', '/v1/intake/sessions', {});
    const path = `/v1/intake/sessions/${draft.body.session_id}/submit`;
    expect((await send(mock.url, 'POST', path, { content: '' }, key('s'))).status).toBe(422);
    expect((await send(mock.url, 'POST', path, { content: 'now some text' }, key('s'))).status).toBe(202);

    const { session_id } = await completeProposal(mock.url);
    mock.addFaults([{ endpoint: 'POST /v1/layout/proposals', status: 503, times: 2 }]);
    const answers = [];
    for (let i = 0; i < 3; i++)
      answers.push(await send(mock.url, 'POST', '/v1/layout/proposals', { session_id }, key('lay')));
    expect(answers.map((a) => a.status)).toEqual([503, 503, 202]);
    const replay = await send(mock.url, 'POST', '/v1/layout/proposals', { session_id }, key('lay'));
    expect(replay.body.proposal_id).toBe(answers[2]!.body.proposal_id);
  });

  it('returns the first resource to a client that gave up waiting and retried (delay after the work)', async () => {
    const { session_id } = await completeProposal(mock.url);
    mock.addFaults([{ endpoint: 'POST /v1/layout/proposals', delay_ms: 2000 }]);
    await expect(
      fetch(`${mock.url}/v1/layout/proposals`, {
        method: 'POST',
        headers: key('slow'),
        body: JSON.stringify({ session_id }),
        signal: AbortSignal.timeout(200),
      }),
    ).rejects.toThrow();
    const retry = await send(mock.url, 'POST', '/v1/layout/proposals', { session_id }, key('slow'));
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const done = await waitForStatus(mock.url, `/v1/layout/proposals/${retry.body.proposal_id}`, ['complete']);
    expect(done.proposal_id).toBe(retry.body.proposal_id);
  });

  it('rejects a key longer than 255 characters', async () => {
    expect(await send(mock.url, 'POST', '/v1/intake/sessions', {}, key('x'.repeat(256)))).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_idempotency_key' } },
    });
  });
});
