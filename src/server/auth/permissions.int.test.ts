import { describe, expect, it } from 'vitest';
import { backends } from '../../testing/backends.js';
import { useServer } from '../test-server.js';
import { holds, ROLES, type Role } from './actor.js';
import { PERMISSIONS } from './permissions.js';

/** Routes of the table that are not in /openapi.json: the document itself, the metrics, the channel WebSocket. */
const OUTSIDE_DOCUMENT = ['GET /openapi.json', 'GET /metrics', 'GET /channels/{channel_id}/ws', 'GET /runs/{id}/ws'];

describe.each(backends)('every route × every role on $name', (backend) => {
  const t = useServer(backend);
  const secrets = new Map<Role, string>();
  let routes: Array<{ method: string; path: string }> = [];

  /** The status of one request with placeholder ids; an event stream is read no further than its headers. */
  const status = async (method: string, path: string, secret?: string) => {
    const url = `${t.server.url}${path.replace(/\{(\w+)\}/g, 'x$1')}`;
    const abort = new AbortController();
    const response = await fetch(url, {
      method,
      signal: abort.signal,
      headers: { 'content-type': 'application/json', ...(secret ? { authorization: `Bearer ${secret}` } : {}) },
      ...(method === 'GET' || method === 'DELETE' ? {} : { body: '{}' }),
    });
    const body = response.headers.get('content-type')?.startsWith('application/json') ? await response.json() : null;
    abort.abort();
    return { status: response.status, body };
  };

  it('has a line in the permission table for every route of /openapi.json, and none for a route not there', async () => {
    const document = (await t.call('GET', '/openapi.json')).body;
    routes = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path })),
    );
    const named = routes.map((r) => `${r.method} ${r.path}`);
    expect(named.filter((r) => !(r in PERMISSIONS))).toEqual([]);
    expect(Object.keys(PERMISSIONS).filter((r) => !named.includes(r) && !OUTSIDE_DOCUMENT.includes(r))).toEqual([]);
    expect(routes.length).toBeGreaterThan(100);
    // the document says the same: each operation names its role
    const documented = routes.filter(
      (r) =>
        document.paths[r.path][r.method.toLowerCase()]['x-runledger-role'] !== PERMISSIONS[`${r.method} ${r.path}`],
    );
    expect(documented).toEqual([]);
  });

  it('makes a key of each role (the first one while the server is open, the rest with it)', async () => {
    const first = await t.call('POST', '/keys', { name: 'admin', roles: ['admin'] });
    expect(first.status).toBe(201);
    secrets.set('admin', first.body.secret);
    for (const role of ROLES.filter((r) => r !== 'admin')) {
      const res = await fetch(`${t.server.url}/keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${first.body.secret}` },
        body: JSON.stringify({ name: role, issued_to: `${role}@example.com`, roles: [role] }),
      });
      expect(res.status).toBe(201);
      secrets.set(role, ((await res.json()) as { secret: string }).secret);
    }
    // on now: no key, no answer
    expect((await t.call('GET', '/runs')).status).toBe(401);
  });

  it('answers 403 exactly where the role lacks the permission, naming the role needed', async () => {
    const wrong: string[] = [];
    for (const route of routes) {
      const access = PERMISSIONS[`${route.method} ${route.path}`]!;
      for (const role of ROLES) {
        const { status: got, body } = await status(route.method, route.path, secrets.get(role));
        const allowed = access === 'public' || holds({ key: role, roles: [role] }, access);
        if (allowed ? got === 401 || got === 403 || got === 429 : got !== 403)
          wrong.push(`${role} ${route.method} ${route.path}: ${got}`);
        if (!allowed && !body?.error?.message?.includes(`'${access}'`))
          wrong.push(`${role} ${route.method} ${route.path}: 403 without the role`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('answers 401 to every route but the public ones without a key', async () => {
    const wrong: string[] = [];
    for (const route of routes) {
      const { status: got } = await status(route.method, route.path);
      const open = PERMISSIONS[`${route.method} ${route.path}`] === 'public';
      if (open ? got === 401 : got !== 401) wrong.push(`${route.method} ${route.path}: ${got}`);
    }
    expect(wrong).toEqual([]);
  });
});
