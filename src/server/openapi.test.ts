import { describe, expect, it } from 'vitest';
import { openapi } from './openapi.js';
import { route } from './route.js';

describe('openapi', () => {
  it('refuses a method and path declared twice, whatever the parameters are named', () => {
    const get = (path: string) =>
      route({ method: 'get', path, tag: 'runs', summary: path, status: 200, handle: async () => null });
    expect(
      Object.keys((openapi([get('/runs/{id}'), get('/runs/{id}/events')], '1') as { paths: object }).paths),
    ).toEqual(['/runs/{id}', '/runs/{id}/events', '/healthz']);
    expect(() => openapi([get('/runs/{id}'), get('/runs/{run_id}')], '1')).toThrow(
      'GET /runs/{run_id} is declared twice',
    );
  });
});
