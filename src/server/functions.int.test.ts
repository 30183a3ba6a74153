import { describe, expect, it } from 'vitest';
import { backends } from '../testing/backends.js';
import { useServer } from './test-server.js';

describe.each(backends)('the /functions routes on $name', (backend) => {
  const { call } = useServer(backend);
  const url = 'http://127.0.0.1:9/fn';

  it('registers a function (201), answers a generated secret once, and never shows it again', async () => {
    const created = await call('POST', '/functions', { name: 'onboard', url, timeout: '10s', retries: 5 });
    expect(created).toMatchObject({
      status: 201,
      body: {
        name: 'onboard',
        version: '1',
        url,
        versions: [{ version: '1', url }],
        timeout_ms: 10_000,
        retries: 5,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    });
    expect(created.body.secret).toMatch(/^[0-9a-f]{64}$/);
    const again = await call('POST', '/functions', { name: 'onboard', url: 'http://127.0.0.1:9/v2', version: '2' });
    expect(again.status).toBe(201);
    expect(again.body).not.toHaveProperty('secret');
    expect(again.body).toMatchObject({ version: '2', timeout_ms: 10_000, retries: 5 });
    expect(again.body.versions.map((v: { version: string }) => v.version)).toEqual(['1', '2']);
    const given = await call('POST', '/functions', { name: 'given', url, secret: 'a secret of 16+ chars' });
    expect(given.status).toBe(201);
    expect(given.body).not.toHaveProperty('secret');
    expect(given.body).toMatchObject({ timeout_ms: 30_000, retries: 3 });
    const one = await call('GET', '/functions/onboard');
    expect(one).toMatchObject({ status: 200, body: { name: 'onboard', version: '2' } });
    const all = await call('GET', '/functions');
    expect(all.body.functions.map((f: { name: string }) => f.name)).toEqual(['given', 'onboard']);
    expect(JSON.stringify([one.body, all.body])).not.toContain(created.body.secret);
    expect(JSON.stringify(all.body)).not.toContain('a secret of 16+ chars');
  });

  it.each([
    ['name', { name: '9lives', url }],
    ['name', { name: 'a'.repeat(65), url }],
    ['url', { name: 'f', url: 'ftp://127.0.0.1/fn' }],
    ['url', { name: 'f', url: 'http://user:pass@127.0.0.1/fn' }],
    ['url', { name: 'f', url: 'not a url' }],
    ['version', { name: 'f', url, version: 'v 1' }],
    ['version', { name: 'f', url, version: '' }],
    ['secret', { name: 'f', url, secret: 'too short' }],
    ['timeout', { name: 'f', url, timeout: 500 }],
    ['timeout', { name: 'f', url, timeout: '10m' }],
    ['timeout', { name: 'f', url, timeout: 'soon' }],
    ['retries', { name: 'f', url, retries: 0 }],
    ['retries', { name: 'f', url, retries: 101 }],
  ])('refuses a bad %s (400 naming it): %j', async (field, body) => {
    const answer = await call('POST', '/functions', body);
    expect(answer.status).toBe(400);
    expect(answer.body.error.problems.map((p: { path: string }) => p.path)).toEqual([field]);
    expect((await call('GET', '/functions/f')).status).toBe(404);
  });

  it('answers 404 for an unknown function, deletes one (204), and 404 after', async () => {
    expect((await call('GET', '/functions/nobody')).status).toBe(404);
    expect((await call('DELETE', '/functions/nobody')).status).toBe(404);
    expect((await call('POST', '/functions', { name: 'doomed', url })).status).toBe(201);
    expect(await call('DELETE', '/functions/doomed')).toEqual({ status: 204, body: null });
    expect((await call('GET', '/functions/doomed')).status).toBe(404);
    expect((await call('POST', '/functions/doomed/runs', {})).status).toBe(404);
  });

  it('starts runs of the newest version (202); with an id, a second start answers the same run', async () => {
    await call('POST', '/functions', { name: 'starter', url });
    await call('POST', '/functions', { name: 'starter', url, version: 'b' });
    const plain = await call('POST', '/functions/starter/runs', { input: { user: 1 } });
    expect(plain).toMatchObject({
      status: 202,
      body: { run_id: expect.any(String), function: 'starter', version: 'b' },
    });
    const other = await call('POST', '/functions/starter/runs', {});
    expect(other.body.run_id).not.toBe(plain.body.run_id);
    const keyed = await call('POST', '/functions/starter/runs', { id: 'starter-user-1', input: { user: 1 } });
    expect(keyed).toMatchObject({ status: 202, body: { run_id: 'starter-user-1', version: 'b' } });
    await call('POST', '/functions', { name: 'starter', url, version: 'c' });
    const repeated = await call('POST', '/functions/starter/runs', { id: 'starter-user-1', input: { user: 2 } });
    expect(repeated).toMatchObject({ status: 202, body: { run_id: 'starter-user-1', version: 'b' } });
    const run = await call('GET', '/runs/starter-user-1');
    expect(run).toMatchObject({
      status: 200,
      body: { workflow: 'starter', input: { function: 'starter', version: 'b', input: { user: 1 } } },
    });
    await call('POST', '/functions', { name: 'other', url });
    const taken = await call('POST', '/functions/other/runs', { id: 'starter-user-1' });
    expect(taken).toMatchObject({
      status: 409,
      body: { error: { message: expect.stringContaining('function other') } },
    });
    expect((await call('POST', '/functions/nobody/runs', {})).status).toBe(404);
    expect((await call('POST', '/functions/9bad/runs', {})).status).toBe(400);
  });
});
