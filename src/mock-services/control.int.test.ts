import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { completeProposal, mockRequest as send, startMockServices, waitForStatus, type MockServices } from './index.js';

let mock: MockServices;
beforeEach(async () => {
  mock = await startMockServices({ speed: 20, seed: 5 });
});
afterEach(() => mock.close());

/** A callback receiver that answers `statuses` in turn (then 200) and keeps what it got. */
async function receiver(statuses: number[] = []) {
  const got: unknown[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      got.push(JSON.parse(body));
      res.writeHead(statuses.shift() ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    got,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const until = async (check: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe('call log', () => {
  it('records method, path, key, body, status and timing of service calls, not control calls', async () => {
    await send(mock.url, 'POST', '/v1/intake/sessions', { content: 'x' }, { 'idempotency-key': 'k9' });
    await send(mock.url, 'GET', '/v1/render/jobs/job-1');
    await send(mock.url, 'GET', '/_faults');
    const { body } = await send(mock.url, 'GET', '/_calls');
    expect(body.calls).toMatchObject([
      {
        seq: 1,
        method: 'POST',
        path: '/v1/intake/sessions',
        idempotency_key: 'k9',
        body: { content: 'x' },
        status: 201,
        fault: null,
        replayed: false,
        dropped: false,
      },
      { seq: 2, method: 'GET', path: '/v1/render/jobs/job-1', idempotency_key: null, status: 404 },
    ]);
    expect(Date.parse(body.calls[0].at)).toBeGreaterThan(Date.now() - 60_000);
    expect(body.calls[0].ms).toBeGreaterThanOrEqual(0);
    expect((await send(mock.url, 'GET', '/_calls?method=get&path=/v1/render/jobs/{id}')).body.calls).toHaveLength(1);
    expect((await send(mock.url, 'DELETE', '/_calls')).status).toBe(204);
    expect(mock.calls()).toEqual([]);
  });
});

describe('seed and reset', () => {
  async function ids(url: string) {
    const { session_id, proposal_id } = await completeProposal(url);
    const spec = await send(url, 'GET', `/v1/layout/proposals/${proposal_id}/spec`);
    return { session_id, proposal_id, spec: spec.body };
  }

  it('gives the same ids and layouts for the same seed and requests', async () => {
    const twin = await startMockServices({ speed: 20, seed: 5 });
    const other = await startMockServices({ speed: 20, seed: 6 });
    try {
      const a = await ids(mock.url);
      expect(await ids(twin.url)).toEqual(a);
      expect((await ids(other.url)).session_id).not.toBe(a.session_id);
      expect(twin.seed).toBe(5);
    } finally {
      await twin.close();
      await other.close();
    }
  });

  it('POST /_reset forgets resources, keys, faults and calls, and starts the seed over', async () => {
    const first = await ids(mock.url);
    await send(mock.url, 'POST', '/v1/intake/sessions', { content: 'k' }, { 'idempotency-key': 'key' });
    mock.addFaults([{ endpoint: 'GET /v1/artifacts/{id}', status: 500, times: 'always' }]);
    expect((await send(mock.url, 'POST', '/_reset')).status).toBe(204);
    expect(mock.faults()).toEqual([]);
    expect(mock.calls()).toEqual([]);
    expect((await send(mock.url, 'GET', `/v1/intake/sessions/${first.session_id}`)).status).toBe(404);
    expect(await ids(mock.url)).toEqual(first);
    const keyed = await send(
      mock.url,
      'POST',
      '/v1/intake/sessions',
      { content: 'other body' },
      { 'idempotency-key': 'key' },
    );
    expect(keyed.status).toBe(201);
  });

  it('refuses a bad speed or seed', async () => {
    await expect(startMockServices({ speed: 0 })).rejects.toThrow(/speed/);
    await expect(startMockServices({ seed: 1.5 })).rejects.toThrow(/seed/);
  });
});

describe('callbacks (brief §4.3)', () => {
  it('POSTs the final view of a render job to its callback_url', async () => {
    const hook = await receiver();
    try {
      const { proposal_id } = await completeProposal(mock.url);
      const job = await send(mock.url, 'POST', '/v1/render/documents', { proposal_id, callback_url: hook.url });
      await until(() => mock.callbacks()[0]?.delivered === true);
      const final = (await send(mock.url, 'GET', `/v1/render/jobs/${job.body.render_job_id}`)).body;
      expect(hook.got[0]).toEqual(final);
      expect(final.status).toBe('complete');
      expect(mock.callbacks()).toMatchObject([
        { url: hook.url, attempts: 1, status: 200, delivered: true, error: null },
      ]);
    } finally {
      await hook.close();
    }
  });

  it('retries a callback that is not accepted, 4 attempts at most', async () => {
    const hook = await receiver([500, 503]);
    const dead = await receiver([500, 500, 500, 500, 500]);
    try {
      const draft = await send(mock.url, 'POST', '/v1/intake/sessions', { content: 'x', callback_url: hook.url });
      await send(mock.url, 'POST', `/v1/intake/sessions/${draft.body.session_id}/submit`);
      await until(() => mock.callbacks()[0]?.delivered === true);
      expect(hook.got).toHaveLength(3);
      expect(hook.got[2]).toMatchObject({ session_id: draft.body.session_id, status: 'ready' });
      expect(mock.callbacks()[0]).toMatchObject({ attempts: 3, status: 200 });

      const { session_id } = await completeProposal(mock.url);
      mock.addFaults([{ endpoint: 'POST /v1/layout/proposals', job: 'hang' }]);
      const proposal = await send(mock.url, 'POST', '/v1/layout/proposals', { session_id, callback_url: dead.url });
      await send(mock.url, 'POST', `/v1/layout/proposals/${proposal.body.proposal_id}/cancel`);
      await until(() => mock.callbacks()[1]?.attempts === 4 && mock.callbacks()[1]?.status === 500);
      // 0.5 + 1 + 2 s of service time between attempts, 175 ms at speed 20: no fifth attempt after twice that
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(dead.got).toHaveLength(4);
      expect(dead.got[0]).toMatchObject({ proposal_id: proposal.body.proposal_id, status: 'cancelled' });
      expect(mock.callbacks()[1]).toMatchObject({ delivered: false, error: 'answered 500' });
    } finally {
      await hook.close();
      await dead.close();
    }
  });

  it('sends a final callback twice when a fault says so', async () => {
    const hook = await receiver();
    try {
      const { proposal_id } = await completeProposal(mock.url);
      mock.addFaults([{ endpoint: 'POST /v1/render/presentations', callback_copies: 2 }]);
      const job = await send(mock.url, 'POST', '/v1/render/presentations', { proposal_id, callback_url: hook.url });
      await until(() => mock.callbacks().filter((c) => c.delivered).length === 2);
      expect(hook.got).toHaveLength(2);
      expect(hook.got[0]).toEqual(hook.got[1]);
      expect(hook.got[0]).toMatchObject({ render_job_id: job.body.render_job_id, status: 'complete' });
      expect(mock.callbacks().map((c) => c.attempts)).toEqual([1, 1]);
    } finally {
      await hook.close();
    }
  });

  it('reports a callback that cannot connect', async () => {
    const hook = await receiver();
    await hook.close();
    const draft = await send(mock.url, 'POST', '/v1/intake/sessions', { content: 'x', callback_url: hook.url });
    await send(mock.url, 'POST', `/v1/intake/sessions/${draft.body.session_id}/submit`);
    await waitForStatus(mock.url, `/v1/intake/sessions/${draft.body.session_id}`, ['ready']);
    await until(() => mock.callbacks()[0]?.attempts === 4);
    expect(mock.callbacks()[0]).toMatchObject({ delivered: false, status: null, error: expect.any(String) });
    expect((await send(mock.url, 'GET', '/_callbacks')).body.callbacks).toHaveLength(1);
  });
});
