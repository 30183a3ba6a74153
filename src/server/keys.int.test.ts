import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { backends } from '../testing/backends.js';
import { refusal, watch } from '../testing/socket.js';
import { MAX_FAILURES } from './auth/abuse.js';
import { useServer } from './test-server.js';

/** A JSON call with a key (or none). */
function caller(url: () => string) {
  return async (method: string, path: string, secret?: string, body?: unknown) => {
    const response = await fetch(`${url()}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(secret ? { authorization: `Bearer ${secret}` } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
  };
}

/** The status of an SSE route, read no further than its headers. */
async function streamStatus(url: string, secret: string): Promise<number> {
  const abort = new AbortController();
  const response = await fetch(url, { headers: { authorization: `Bearer ${secret}` }, signal: abort.signal });
  abort.abort();
  return response.status;
}

describe.each(backends)('API keys on $name', (backend) => {
  describe('created, listed, rotated and revoked', () => {
    const t = useServer(backend);
    const call = caller(() => t.server.url);
    let admin = '';

    it('answers today with no token and no key, and turns keys on with the first one', async () => {
      expect((await call('GET', '/runs')).status).toBe(200);
      const created = await call('POST', '/keys', undefined, {
        name: 'root',
        issued_to: 'ana@example.com',
        roles: ['admin'],
      });
      expect(created.status).toBe(201);
      admin = created.body.secret;
      expect(admin).toMatch(/^rl_[A-Za-z0-9_-]{43}$/);
      expect(created.body).toMatchObject({
        name: 'root',
        issued_to: 'ana@example.com',
        roles: ['admin'],
        namespace: 'default',
      });
      expect(created.body.prefix).toBe(admin.slice(0, 8));
      expect((await call('GET', '/runs')).status).toBe(401);
      expect((await call('GET', '/runs', admin)).status).toBe(200);
      expect((await call('GET', '/healthz')).status).toBe(200);
    });

    it('refuses bad input naming the field, and a name taken with 409', async () => {
      const bad = async (body: unknown) => {
        const answer = await call('POST', '/keys', admin, body);
        expect(answer.status).toBe(400);
        return answer.body.error.problems[0];
      };
      expect(await bad({ name: 'x', roles: ['root'] })).toMatchObject({
        path: 'roles[0]',
        message: expect.stringContaining('admin, developer'),
      });
      expect(await bad({ name: '', roles: ['viewer'] })).toMatchObject({
        path: 'name',
        message: expect.stringContaining('1'),
      });
      expect(await bad({ name: 'a'.repeat(101), roles: ['viewer'] })).toMatchObject({
        path: 'name',
        message: expect.stringContaining('100'),
      });
      expect(await bad({ name: 'x', roles: [] })).toMatchObject({ path: 'roles' });
      expect(await bad({ name: 'x', roles: ['viewer'], namespace: 'Bad NS' })).toMatchObject({ path: 'namespace' });
      const bootstrap = await call('POST', '/keys', admin, { name: 'bootstrap', roles: ['viewer'] });
      expect(bootstrap.status).toBe(400);
      expect(bootstrap.body.error.message).toContain('bootstrap');
      const taken = await call('POST', '/keys', admin, { name: 'root', roles: ['viewer'] });
      expect(taken.status).toBe(409);
      expect(taken.body.error.message).toContain("'root'");
    });

    it('lists prefixes, never a secret or its hash', async () => {
      const made = await call('POST', '/keys', admin, { name: 'reader', roles: ['viewer'], namespace: '*' });
      const listed = await call('GET', '/keys', admin);
      expect(listed.body.keys.map((k: { name: string }) => k.name)).toEqual(['root', 'reader']);
      const text = JSON.stringify(listed.body);
      expect(text).not.toContain(made.body.secret);
      expect(text).not.toContain(admin);
      expect(Object.keys(listed.body.keys[1]).sort()).toEqual(
        ['created_at', 'id', 'issued_to', 'last_used_at', 'name', 'namespace', 'prefix', 'revoked_at', 'roles'].sort(),
      );
      expect((await call('GET', '/keys', made.body.secret)).status).toBe(403);
    });

    it('rotates: the old secret stops, the new one works', async () => {
      const made = await call('POST', '/keys', admin, { name: 'ops', roles: ['operator'] });
      expect((await call('GET', '/runs', made.body.secret)).status).toBe(200);
      const rotated = await call('POST', `/keys/${made.body.id}/rotate`, admin);
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret).not.toBe(made.body.secret);
      expect(rotated.body.prefix).toBe(rotated.body.secret.slice(0, 8));
      expect((await call('GET', '/runs', made.body.secret)).status).toBe(401);
      expect((await call('GET', '/runs', rotated.body.secret)).status).toBe(200);
      expect((await call('POST', '/keys/key_nope/rotate', admin)).status).toBe(404);
    });

    it('revokes: REST, SSE and the WebSocket refuse the key; a revoked key gets no new secret', async () => {
      const made = await call('POST', '/keys', admin, { name: 'gone', roles: ['developer'] });
      const secret = made.body.secret;
      expect(await streamStatus(`${t.server.url}/events/stream`, secret)).toBe(200);
      const before = watch(t.server.url, 'lobby', 0, `&token=${secret}`);
      await before.open;
      before.ws.close();
      const revoked = await call('DELETE', `/keys/${made.body.id}`, admin);
      expect(revoked.status).toBe(200);
      expect(revoked.body.revoked_at).not.toBeNull();
      expect((await call('GET', '/runs', secret)).status).toBe(401);
      expect(await streamStatus(`${t.server.url}/events/stream`, secret)).toBe(401);
      expect((await refusal(`${t.server.url}/channels/lobby/ws?token=${secret}`)).status).toBe(401);
      expect((await call('POST', `/keys/${made.body.id}/rotate`, admin)).status).toBe(409);
      const listed = (await call('GET', '/keys', admin)).body.keys.find((k: { name: string }) => k.name === 'gone');
      expect(listed.revoked_at).toBe(revoked.body.revoked_at);
      expect(listed.last_used_at).not.toBeNull();
    });

    it('takes keys on SSE and the WebSocket, and a post needs what POST /channels/{id}/messages needs', async () => {
      const viewer = (await call('POST', '/keys', admin, { name: 'watcher', roles: ['viewer'] })).body.secret;
      const developer = (await call('POST', '/keys', admin, { name: 'app', roles: ['developer'] })).body.secret;
      expect(await streamStatus(`${t.server.url}/events/stream`, viewer)).toBe(200);
      expect(await streamStatus(`${t.server.url}/events/stream`, 'rl_made-up')).toBe(401);
      expect((await refusal(`${t.server.url}/channels/lobby/ws`)).status).toBe(401);
      expect((await refusal(`${t.server.url}/channels/lobby/ws?token=rl_made-up`)).status).toBe(401);
      const post = { type: 'post', message: { event_id: 'e1', sender_id: 'ana', role: 'user', content: 'hi' } };
      const watching = watch(t.server.url, 'lobby', 0, `&token=${viewer}`);
      await watching.open;
      watching.ws.send(JSON.stringify(post));
      await expect
        .poll(() => watching.frames.find((f) => f.type === 'error'))
        .toMatchObject({ error: { code: 'forbidden' } });
      watching.ws.close();
      const posting = watch(t.server.url, 'lobby', 0, `&token=${developer}`);
      await posting.open;
      posting.ws.send(JSON.stringify(post));
      await expect.poll(() => posting.frames.find((f) => f.type !== 'message')).toMatchObject({ type: 'posted' });
      posting.ws.close();
    });
  });

  describe('RUNLEDGER_TOKEN', () => {
    const t = useServer(backend, { token: 'bootstrap-token' });
    const call = caller(() => t.server.url);

    it('is the bootstrap admin key, beside the keys it creates', async () => {
      expect((await call('GET', '/runs')).status).toBe(401);
      expect((await call('GET', '/runs', 'wrong-token')).status).toBe(401);
      expect((await call('GET', '/runs', 'bootstrap-token')).status).toBe(200);
      const made = await call('POST', '/keys', 'bootstrap-token', { name: 'ci', roles: ['worker'] });
      expect(made.status).toBe(201);
      const claim = await call('POST', '/queues/q/claim', made.body.secret, { worker: 'w1' });
      expect(claim.status, JSON.stringify(claim.body)).toBe(200);
      const refused = await call('POST', '/workflows', made.body.secret, {});
      expect(refused.status).toBe(403);
      expect(refused.body.error).toEqual({
        code: 'forbidden',
        message: "POST /workflows needs the role 'developer'; key 'ci' has 'worker'",
      });
    });
  });

  describe('failed authentication', () => {
    const lines: string[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({ write: (chunk, _encoding, done) => (lines.push(chunk.toString()), done()) }),
    );
    const t = useServer(backend, { token: 'the-real-token', logger });
    const call = caller(() => t.server.url);

    it('slows an address down after repeated failures, logs it once, and never logs a secret', async () => {
      for (let i = 0; i < MAX_FAILURES; i++) expect((await call('GET', '/runs', `rl_guess-${i}`)).status).toBe(401);
      const slowed = await call('GET', '/runs', 'rl_guess-last');
      expect(slowed.status).toBe(401);
      const refused = await call('GET', '/runs', 'the-real-token');
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.body.error.code).toBe('too_many_failures');
      await call('GET', '/runs', 'rl_guess-more');
      const logged = lines.filter((l) => l.includes('auth:throttled'));
      expect(logged).toHaveLength(1);
      const all = lines.join('\n');
      expect(all).not.toContain('rl_guess');
      expect(all).not.toContain('the-real-token');
      // the health check needs no key, so it is never slowed
      expect((await call('GET', '/healthz')).status).toBe(200);
    });
  });
});
