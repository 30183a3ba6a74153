import { describe, expect, it } from 'vitest';
import { backends } from '../testing/backends.js';
import { useServer } from './test-server.js';

describe.each(backends)('the /limits routes on $name', (backend) => {
  const { call } = useServer(backend);

  it('creates, changes, lists, shows and deletes a named limit', async () => {
    const made = await call('POST', '/limits', { name: 'openai', limit: 100, period: '1m' });
    expect(made).toMatchObject({ status: 200, body: { name: 'openai', limit: 100, period_ms: 60_000, key: null } });
    expect(made.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    const changed = await call('POST', '/limits', { name: 'openai', limit: 5, period: 1000, key: 'input.user' });
    expect(changed.body).toMatchObject({
      limit: 5,
      period_ms: 1000,
      key: 'input.user',
      created_at: made.body.created_at,
    });
    await call('POST', '/limits', { name: 'anthropic', limit: 1, period: '1s' });
    expect((await call('GET', '/limits')).body.limits.map((l: { name: string }) => l.name)).toEqual([
      'anthropic',
      'openai',
    ]);
    expect(await call('GET', '/limits/openai')).toMatchObject({ status: 200, body: { limit: 5 } });
    expect((await call('DELETE', '/limits/openai')).status).toBe(204);
    expect(await call('GET', '/limits/openai')).toMatchObject({
      status: 404,
      body: { error: { message: "no rate limit named 'openai'" } },
    });
    expect((await call('DELETE', '/limits/openai')).status).toBe(404);
  });

  it.each([
    [{ name: 'x', limit: 0, period: '1s' }, 'limit'],
    [{ name: 'x', limit: 1.5, period: '1s' }, 'limit'],
    [{ name: 'x', limit: 10, period: '500ms' }, 'period'],
    [{ name: 'x', limit: 10, period: '31d' }, 'period'],
    [{ name: 'x', limit: 10, period: 'soon' }, 'period'],
    [{ name: 'x', limit: 10, period: '1s', key: 'input.' }, 'key'],
    [{ name: 'x', limit: 10, period: '1s', key: 'has space' }, 'key'],
    [{ name: 'bad name', limit: 10, period: '1s' }, 'name'],
  ])('refuses %j with a 400 naming %s', async (body, field) => {
    const answer = await call('POST', '/limits', body);
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toMatch(new RegExp(`^${field}: `));
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await call('GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/limits', '/limits/{name}']));
    expect(Object.keys(doc.paths['/limits/{name}'])).toEqual(expect.arrayContaining(['get', 'delete']));
  });
});
