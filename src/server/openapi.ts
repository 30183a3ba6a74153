import { z } from 'zod';
import type { Route } from './route.js';
import { errorBody } from './schemas.js';
import { accessOf } from './auth/permissions.js';

const REASONS: Record<number, string> = {
  400: 'Invalid input: every problem with its JSON path',
  401: 'Missing, unknown or revoked key (when keys are on: docs/security.md)',
  403: 'The key lacks the role this operation needs (`x-runledger-role`)',
  404: 'Not found',
  408: 'Timed out',
  409: 'Conflict with the current state',
  413: 'Request body too large',
};

const schema = (s: z.ZodType) => z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' });

/**
 * The OpenAPI 3.1 document of `routes`, from the same zod schemas that validate requests. A method
 * and path declared twice (whatever its parameters are named) throws: the router would answer with
 * the first and the document show the last.
 */
export function openapi(routes: Route[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const declared = new Set<string>();
  for (const r of routes) {
    const key = `${r.method.toUpperCase()} ${r.path.replace(/\{\w+\}/g, '{}')}`;
    if (declared.has(key)) throw new Error(`${r.method.toUpperCase()} ${r.path} is declared twice`);
    declared.add(key);
    const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const query = r.query
      ? Object.entries((schema(r.query) as { properties?: Record<string, unknown> }).properties ?? {}).map(
          ([name, s]) => ({ name, in: 'query', required: false, schema: s }),
        )
      : [];
    const responses: Record<string, unknown> = {
      [r.status]: r.response
        ? { description: 'OK', content: { 'application/json': { schema: schema(r.response) } } }
        : { description: 'No content' },
    };
    const access = accessOf(r.method, r.path);
    for (const status of [...(r.errors ?? []), ...(access === 'public' ? [] : [401, 403])])
      responses[status] = {
        description: REASONS[status] ?? 'Error',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    (paths[r.path] ??= {})[r.method] = {
      summary: r.summary,
      tags: [r.tag],
      'x-runledger-role': access,
      ...(access === 'public' ? { security: [] } : {}),
      parameters: [...params, ...query],
      ...(r.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: schema(r.body) } } } }
        : {}),
      responses,
    };
  }
  paths['/healthz'] = {
    get: {
      summary: 'Health (no token needed)',
      tags: ['health'],
      'x-runledger-role': 'public',
      security: [],
      responses: { 200: { description: 'OK' } },
    },
  };
  return {
    openapi: '3.1.0',
    info: { title: 'runledger', version },
    components: {
      schemas: { Error: schema(errorBody) },
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    },
    security: [{ bearer: [] }],
    paths,
  };
}
