import { z } from 'zod';
import type { FunctionInfo, Functions } from '../../functions/functions.js';
import { iso } from '../../iso.js';
import { route } from '../route.js';

/*
 * Durable functions over HTTP (docs/protocol.md, "Durable functions"): register an endpoint, start runs of it.
 * A run is a run like any other: the runs routes read, signal, cancel and wait for it.
 */

const functionResponse = z.object({
  name: z.string(),
  version: z.string().describe('the version new runs start on'),
  url: z.string(),
  versions: z.array(z.object({ version: z.string(), url: z.string() })),
  timeout_ms: z.int(),
  retries: z.int(),
  created_at: z.string(),
  updated_at: z.string(),
});

const registerRequest = z.object({
  name: z.string().describe("1–64 letters, digits, '.', '_' or '-', starting with a letter"),
  url: z.string().describe('where the engine POSTs its calls: http(s), no credentials; the SSRF rules of http_request'),
  version: z.string().optional().describe("default '1'; new runs start on the version registered last"),
  secret: z.string().optional().describe('the HMAC key, 16–256 characters; default: the one it has, or a new one'),
  timeout: z.union([z.int(), z.string()]).optional().describe('each call, 1s to 5m; default 30s'),
  retries: z.int().optional().describe("a step's attempts in all, 1–100; default 3"),
});

const record = (f: FunctionInfo) => ({
  name: f.name,
  version: f.version,
  url: f.url,
  versions: f.versions,
  timeout_ms: f.timeoutMs,
  retries: f.retries,
  created_at: iso(f.createdAt),
  updated_at: iso(f.updatedAt),
});

export function functionRoutes(functions: Functions) {
  const { registry } = functions;
  return [
    route({
      method: 'post',
      path: '/functions',
      tag: 'functions',
      summary:
        'Register a function endpoint (a version of it); `secret` is in the answer only when it was generated, and never shown again',
      body: registerRequest,
      status: 201,
      response: functionResponse.extend({ secret: z.string().optional() }),
      errors: [400, 413],
      handle: async ({ body }) => {
        const { info, secret } = await registry.register(body);
        return { ...record(info), ...(secret ? { secret } : {}) };
      },
    }),
    route({
      method: 'get',
      path: '/functions',
      tag: 'functions',
      summary: 'The registered functions, by name (never their secrets)',
      status: 200,
      response: z.object({ functions: z.array(functionResponse) }),
      handle: async () => ({ functions: (await registry.list()).map(record) }),
    }),
    route({
      method: 'get',
      path: '/functions/{name}',
      tag: 'functions',
      summary: 'One function',
      status: 200,
      response: functionResponse,
      errors: [404],
      handle: async ({ params }) => record(await registry.info(params.name!)),
    }),
    route({
      method: 'delete',
      path: '/functions/{name}',
      tag: 'functions',
      summary: 'Delete a function and its versions: its runs fail at their next call, naming it',
      status: 204,
      errors: [404],
      handle: ({ params }) => registry.delete(params.name!),
    }),
    route({
      method: 'post',
      path: '/functions/{name}/runs',
      tag: 'functions',
      summary: "Start a run of the function's newest version; with `id`, a second start of that id starts nothing",
      body: z.object({ input: z.unknown().optional(), id: z.string().min(1).max(200).optional() }),
      status: 202,
      response: z.object({ run_id: z.string(), function: z.string(), version: z.string() }),
      errors: [400, 404, 409, 413],
      handle: async ({ params, body }) => {
        const run = await functions.start(params.name!, body.input ?? null, body.id ? { id: body.id } : {});
        return { run_id: run.runId, function: run.function, version: run.version };
      },
    }),
  ];
}
