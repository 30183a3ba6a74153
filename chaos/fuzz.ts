import { connect } from 'node:net';

/** One request the fuzzer sent that broke a rule: a 5xx, a dead `/healthz`, or stored state changed by a rejected request. */
export interface FuzzFailure {
  method: string;
  path: string;
  /** What was bad about the request: `path id: %00`, `body: nested 100000 levels` … */
  input: string;
  status: number;
  problem: string;
  /** The start of the response body. */
  body: string;
}

export interface FuzzOptions {
  /** Sends a request; default the global fetch. An in-process app's `fetch` works too (then pass `webSocket: false`). */
  fetch?: (request: Request) => Promise<Response>;
  /** Headers sent with every request (`Authorization: Bearer …`). */
  headers?: Record<string, string>;
  /**
   * What the stored state is, as a string that changes whenever anything is stored (e.g. the
   * journal's head cursor). Compared before and after every request that got a 4xx: a rejected
   * request must store nothing. Without it, nothing is compared.
   */
  fingerprint?: () => Promise<string>;
  /** Statuses of 500 and above that are allowed, from routes and `/healthz` alike (an outage test allows 503). Default none. */
  allowStatuses?: number[];
  /** Also send malformed WebSocket upgrades (`/channels/{id}/ws`) over raw TCP; default true when the base URL is http. */
  webSocket?: boolean;
  /**
   * Valid-looking bodies by `METHOD /path` (OpenAPI form), whose fields are replaced one at a time;
   * default `SAMPLES`. Routes without one get a body built from their schema.
   */
  samples?: Record<string, unknown>;
  /** Cases per route at most (the first ones are the most telling); default unlimited. */
  maxCasesPerRoute?: number;
  /** Called after each request, for progress. */
  onRequest?: (method: string, path: string, status: number) => void;
}

export interface FuzzReport {
  requests: number;
  failures: FuzzFailure[];
  /** Requests by status class: `2xx`, `4xx` … */
  statuses: Record<string, number>;
}

interface Case {
  method: string;
  /** The path with its params filled in, already encoded: sent as it is. */
  path: string;
  input: string;
  body?: string;
  headers?: Record<string, string>;
}

interface Operation {
  method: string;
  path: string;
  params: string[];
  query: { name: string; schema: JsonSchema }[];
  body: JsonSchema | null;
}

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  items?: JsonSchema;
  default?: unknown;
  minLength?: number;
  pattern?: string;
  format?: string;
  additionalProperties?: unknown;
};

/** Path parameter values, as they go on the wire (already percent-encoded where they are escapes). */
export const BAD_PATH_VALUES: [string, string][] = [
  ['%00', 'NUL'],
  ['%ED%A0%80', 'UTF-8 of a lone surrogate'],
  ['%E0%A4%A', 'truncated escape'],
  ['%', 'lone percent'],
  ['%zz', 'non-hex escape'],
  ['%C0%AF', 'overlong UTF-8'],
  ['%FF%FE', 'invalid UTF-8'],
  ['..%2F..%2F..%2Fetc%2Fpasswd', 'encoded traversal'],
  ['..%5C..%5Cwindows', 'backslash traversal'],
  ['%F0%9F%98%80', 'emoji'],
  ['x'.repeat(10_000), '10,000 characters'],
  ["'%3B%20DROP%20TABLE%20events%3B--", 'SQL'],
  ['%0D%0ASet-Cookie:%20x=1', 'CRLF'],
];

/** Query values, on the wire. */
export const BAD_QUERY_VALUES: [string, string][] = [
  ['%00', 'NUL'],
  ['%ED%A0%80', 'UTF-8 of a lone surrogate'],
  ['%E0%A4%A', 'truncated escape'],
  ['%zz', 'non-hex escape'],
  ['-1', 'negative'],
  ['1e309', 'infinite number'],
  ['99999999999999999999999', 'huge number'],
  ['x'.repeat(100_000), '100,000 characters'],
  ['garbage-key', 'garbage'],
];

/** A request without an answer (its headers) by then is a failure: a hang is a bug too. */
const REQUEST_TIMEOUT_MS = 10_000;

const deep = (levels: number, open = '[', close = ']'): string => open.repeat(levels) + close.repeat(levels);
const deepObject = (levels: number): string => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

/** Whole bodies, as text. */
export const BAD_BODIES: [string, string][] = [
  ['{', 'truncated JSON'],
  ['{"a":1,}', 'trailing comma'],
  ['null', 'null'],
  ['[]', 'an array'],
  ['"text"', 'a string'],
  ['12', 'a number'],
  ['{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}', 'prototype keys'],
  ['"\\u0000"', 'a NUL string'],
  ['{"\\u0000":1}', 'a NUL key'],
  ['{"a":"\\ud800"}', 'a lone surrogate'],
  ['{"\\udc00":"x"}', 'a lone surrogate key'],
  [deep(5_000), 'arrays nested 5,000 levels'],
  [deep(100_000), 'arrays nested 100,000 levels'],
  [deepObject(100_000), 'objects nested 100,000 levels'],
  [`{"a":"${'x'.repeat(2 * 1024 * 1024)}"}`, '2 MiB'],
  ['\uFEFF{}', 'a byte-order mark'],
];

/** Values put in place of each field of a valid-looking body, as JSON text. */
export const BAD_FIELD_VALUES: [string, string][] = [
  ['"a\\u0000b"', 'NUL'],
  ['"\\udfff\\ud800"', 'lone surrogates'],
  [deep(5_000), 'nested 5,000 levels'],
  [deepObject(100_000), 'nested 100,000 levels'],
  ['{"k\\u0000":"\\ud800"}', 'NUL key and lone surrogate inside an object'],
  ['"file:///etc/passwd"', 'a file URL'],
  [`"${'x'.repeat(300_000)}"`, '300,000 characters'],
];

/**
 * Valid bodies of runledger's routes whose schema the document cannot show (checked by code), or
 * whose interesting fields are deep: the fuzzer replaces their fields one at a time, down to
 * `steps[0].config.mapping.k`.
 */
export const SAMPLES: Record<string, unknown> = {
  'POST /workflows': {
    name: 'fuzz',
    steps: [
      { id: 'map', type: 'transform', config: { mapping: { k: 'v', nested: { a: 'b' } } } },
      {
        id: 'call',
        type: 'http_request',
        config: { method: 'POST', url: 'https://example.com/x', headers: { 'x-k': 'v' }, body: { k: 'v' } },
      },
    ],
  },
  'PUT /workflows/{id}': {
    name: 'fuzz-2',
    steps: [{ id: 'log', type: 'log', config: { message: 'hi {{trigger.k}}' } }],
  },
  'POST /workflows/{id}/execute': { trigger_data: { k: 'v', nested: { a: 'b' } }, trigger_type: 'manual' },
  'POST /events': { source: 'fuzz', 'detail-type': 'fuzzed', detail: { k: 'v', nested: { a: 'b' } }, resources: ['r'] },
  'POST /rules': {
    name: 'fuzz-rule',
    pattern: { source: ['fuzz'], detail: { k: ['v'] } },
    target: { workflow: 'fuzz' },
    input: { k: '$.detail.k' },
  },
  'POST /schedules': {
    name: 'fuzz-schedule',
    cron: '0 0 1 1 *',
    timezone: 'UTC',
    target: { workflow: 'fuzz' },
    input: { k: 'v' },
  },
  'POST /channels/{channel_id}/messages': {
    sender_id: 'fuzz',
    role: 'user',
    content: 'hello',
    metadata: { k: 'v', nested: { a: 'b' } },
  },
  'POST /secrets': { name: 'fuzz_secret', value: 'value' },
  'POST /sessions': { agent: 'sample-agent', input: { k: 'v' } },
  'POST /sessions/{id}/report': { status: 'COMPLETED', error_message: null },
};

/**
 * Sends malformed, deep, huge, NUL, lone-surrogate, traversal and bad-percent-escape inputs to every
 * route and method in the server's `/openapi.json` — in path params, query values, headers and
 * bodies (whole, and field by field on a body built from the route's schema) — plus methods no route
 * has and malformed WebSocket upgrades. Checks that none is answered 5xx (unless allowed), that
 * `/healthz` answers 200 after each, and (with `fingerprint`) that a request answered 4xx stored nothing.
 *
 * @example
 * const report = await fuzz(server.url, { fingerprint: async () => String(await engine.store.eventHead()) });
 * expect(report.failures).toEqual([]);
 */
export async function fuzz(baseUrl: string, options: FuzzOptions = {}): Promise<FuzzReport> {
  const send = options.fetch ?? ((request: Request) => fetch(request));
  const base = baseUrl.replace(/\/$/, '');
  const report: FuzzReport = { requests: 0, failures: [], statuses: {} };
  const document = (await (
    await send(new Request(`${base}/openapi.json`, { headers: options.headers ?? {} }))
  ).json()) as {
    paths: Record<
      string,
      Record<
        string,
        {
          parameters?: { name: string; in: string; schema: JsonSchema }[];
          requestBody?: { content: Record<string, { schema: JsonSchema }> };
        }
      >
    >;
  };
  const allowed = new Set(options.allowStatuses ?? []);
  let state = '';

  const run = async (c: Case): Promise<void> => {
    const url = `${base}${c.path}`;
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)),
      REQUEST_TIMEOUT_MS,
    );
    let status = 0;
    let body = '';
    try {
      const response = await send(
        new Request(url, {
          method: c.method,
          headers: {
            ...(c.body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...options.headers,
            ...c.headers,
          },
          ...(c.body !== undefined ? { body: c.body } : {}),
          signal: controller.signal,
        }),
      );
      status = response.status;
      // a stream (SSE) that was accepted never ends: its status is what counts
      body = response.headers.get('content-type')?.includes('text/event-stream')
        ? ''
        : (await response.text()).slice(0, 500);
      controller.abort();
    } catch (error) {
      controller.abort();
      const reason =
        controller.signal.reason instanceof Error ? controller.signal.reason.message : (error as Error).message;
      report.failures.push({
        method: c.method,
        path: c.path.slice(0, 200),
        input: c.input,
        status: 0,
        problem: `request failed: ${reason}`,
        body: '',
      });
      return;
    } finally {
      clearTimeout(timer);
    }
    report.requests++;
    const group = `${Math.floor(status / 100)}xx`;
    report.statuses[group] = (report.statuses[group] ?? 0) + 1;
    options.onRequest?.(c.method, c.path, status);
    const fail = (problem: string) =>
      report.failures.push({ method: c.method, path: c.path.slice(0, 200), input: c.input, status, problem, body });
    if (status >= 500 && !allowed.has(status)) fail(`answered ${status}`);
    const health = await send(new Request(`${base}/healthz`)).then(
      (r) => r.status,
      () => 0,
    );
    if (health !== 200 && !allowed.has(health)) fail(`/healthz answered ${health} afterwards`);
    if (options.fingerprint) {
      const now = await options.fingerprint();
      if (status >= 400 && status < 500 && now !== state)
        fail(`a rejected request changed the stored state (${state} → ${now})`);
      state = now;
    }
  };

  const ids = await fixtures(send, base, options.headers ?? {});
  if (options.fingerprint) state = await options.fingerprint();
  const samples = options.samples ?? SAMPLES;
  // deletes last: they would remove the fixtures the other cases address
  const ordered = operations(document).sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
  for (const operation of ordered) {
    const cases = casesFor(operation, ids, samples);
    for (const c of cases.slice(0, options.maxCasesPerRoute ?? cases.length)) await run(c);
  }
  for (const c of strayCases()) await run(c);
  if (options.webSocket ?? base.startsWith('http://')) {
    for (const failure of await fuzzWebSocket(base, options.headers ?? {})) report.failures.push(failure);
  }
  return report;
}

function operations(document: {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { name: string; in: string; schema: JsonSchema }[];
        requestBody?: { content: Record<string, { schema: JsonSchema }> };
      }
    >
  >;
}): Operation[] {
  const out: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const parameters = op.parameters ?? [];
      out.push({
        method: method.toUpperCase(),
        path,
        params: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema })),
        body: op.requestBody?.content['application/json']?.schema ?? null,
      });
    }
  }
  return out;
}

/** Ids of things that exist, by `<first path segment>.<param>` (`workflows.id`), so that cases reach past the 404. */
type Ids = Record<string, string>;

/**
 * Creates a workflow, an execution of it, an event, a rule, a schedule, a channel message and a
 * secret through the API (whatever of it this server offers), and returns their ids for the paths.
 */
async function fixtures(
  send: (request: Request) => Promise<Response>,
  base: string,
  headers: Record<string, string>,
): Promise<Ids> {
  const ids: Ids = { 'channels.channel_id': 'fuzz-channel', 'secrets.name': 'fuzz_secret' };
  const post = async (path: string, body: unknown): Promise<Record<string, unknown> | null> => {
    const response = await send(
      new Request(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      }),
    );
    const text = await response.text();
    return response.ok && text !== '' ? (JSON.parse(text) as Record<string, unknown>) : null;
  };
  const workflow = await post('/workflows', {
    name: 'fuzz-fixture',
    steps: [{ id: 'log', type: 'log', config: { message: 'fixture' } }],
  });
  if (workflow) {
    ids['workflows.id'] = String(workflow.id);
    const execution = await post(`/workflows/${workflow.id}/execute`, { trigger_data: { k: 'v' } });
    if (execution) ids['workflows.execution_id'] = ids['runs.id'] = String(execution.execution_id);
  }
  const event = await post('/events', SAMPLES['POST /events']);
  if (event) ids['events.id'] = String(event.id);
  const rule = await post('/rules', {
    ...(SAMPLES['POST /rules'] as object),
    name: 'fuzz-fixture-rule',
    target: { workflow: ids['workflows.id'] ?? 'fuzz' },
  });
  if (rule) ids['rules.id'] = String(rule.id);
  const schedule = await post('/schedules', {
    ...(SAMPLES['POST /schedules'] as object),
    target: { workflow: ids['workflows.id'] ?? 'fuzz' },
  });
  if (schedule) ids['schedules.id'] = String(schedule.id);
  await post('/channels/fuzz-channel/messages', SAMPLES['POST /channels/{channel_id}/messages']);
  await post('/secrets', SAMPLES['POST /secrets']);
  return ids;
}

/**
 * A path with the params in `values` set (already encoded), the others to an existing id where there
 * is one. A long poll (a `timeout` query param) is told to wait 100 ms unless `timeout` is being fuzzed:
 * otherwise it would hold every case for its default 30 s.
 */
const filler =
  (operation: Operation, ids: Ids) =>
  (values: Record<string, string> = {}, fuzzedQuery?: string): string => {
    const segment = operation.path.split('/')[1] ?? '';
    const path = operation.path.replace(
      /\{(\w+)\}/g,
      (_, name: string) => values[name] ?? encodeURIComponent(ids[`${segment}.${name}`] ?? 'fuzz_missing_1'),
    );
    const longPoll = operation.query.some((q) => q.name === 'timeout') && fuzzedQuery !== 'timeout';
    return longPoll ? `${path}?timeout=100&` : `${path}?`;
  };

function casesFor(operation: Operation, ids: Ids, samples: Record<string, unknown>): Case[] {
  const { method } = operation;
  const cases: Case[] = [];
  const fill = filler(operation, ids);
  const given = samples[`${method} ${operation.path}`];
  const sample = operation.body ? (given !== undefined ? given : sampleOf(operation.body)) : undefined;
  const sampleText = sample === undefined ? undefined : JSON.stringify(sample);
  // path params
  for (const param of operation.params) {
    for (const [value, label] of BAD_PATH_VALUES)
      cases.push({
        method,
        path: fill({ [param]: value }),
        input: `path ${param}: ${label}`,
        ...(sampleText !== undefined ? { body: sampleText } : {}),
      });
  }
  // query values
  for (const { name } of operation.query) {
    for (const [value, label] of BAD_QUERY_VALUES)
      cases.push({
        method,
        path: `${fill({}, name)}${encodeName(name)}=${value}`,
        input: `query ${name}: ${label}`,
        ...(sampleText !== undefined ? { body: sampleText } : {}),
      });
  }
  if (operation.query.length > 0 || method === 'GET') {
    cases.push({ method, path: `${fill()}unknown%00=1&%zz=%zz`, input: 'query: unknown and malformed names' });
  }
  // headers every route may read
  for (const [name, value, label] of [
    ['idempotency-key', 'x'.repeat(10_000), 'Idempotency-Key of 10,000 characters'],
    ['idempotency-key', '\u00ff\u00fe', 'Latin-1 Idempotency-Key'],
    ['last-event-id', 'garbage-%00', 'garbage Last-Event-ID'],
    ['last-event-id', '999999999999999999999', 'huge Last-Event-ID'],
  ] as const) {
    cases.push({
      method,
      path: fill(),
      input: `header ${label}`,
      headers: { [name]: value },
      ...(sampleText !== undefined ? { body: sampleText } : {}),
    });
  }
  // bodies
  if (operation.body && sample !== undefined) {
    for (const [body, label] of BAD_BODIES) cases.push({ method, path: fill(), input: `body: ${label}`, body });
    cases.push({
      method,
      path: fill(),
      input: 'body: wrong content-type',
      body: sampleText!,
      headers: { 'content-type': 'text/plain' },
    });
    for (const field of fieldsOf(sample)) {
      for (const [value, label] of BAD_FIELD_VALUES) {
        cases.push({
          method,
          path: fill(),
          input: `body ${field.join('.')}: ${label}`,
          body: replaceAt(sample, field, value),
        });
      }
    }
  }
  return cases;
}

/** Methods no route has, and paths no route matches. */
function strayCases(): Case[] {
  return [
    { method: 'PATCH', path: '/workflows', input: 'unrouted method' },
    { method: 'OPTIONS', path: '/runs', input: 'OPTIONS' },
    { method: 'GET', path: '/%00', input: 'NUL path' },
    { method: 'GET', path: '/..%2F..%2Fetc%2Fpasswd', input: 'traversal path' },
    { method: 'GET', path: '/workflows/%E0%A4%A/executions/%', input: 'bad escapes in two params' },
    { method: 'GET', path: `/${'a/'.repeat(2_000)}`, input: '2,000 segments' },
  ];
}

function encodeName(name: string): string {
  return encodeURIComponent(name);
}

/** A small value the schema accepts, or something close (for routes checked by code, not schema). */
function sampleOf(schema: JsonSchema, depth = 0): unknown {
  if (depth > 6) return null;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  const options = schema.anyOf ?? schema.oneOf;
  if (options?.length) return sampleOf(options[0]!, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, inner] of Object.entries(schema.properties ?? {})) out[key] = sampleOf(inner, depth + 1);
      return out;
    }
    case 'array':
      return schema.items ? [sampleOf(schema.items, depth + 1)] : [];
    case 'string':
      if (schema.format === 'date-time') return new Date(0).toISOString();
      if (schema.format === 'uri') return 'https://example.com/';
      return 'fuzz';
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return true;
    default:
      return {};
  }
}

/** Paths of the fields of `value`, five levels down: every key of objects and the first item of arrays. */
function fieldsOf(
  value: unknown,
  prefix: (string | number)[] = [],
  out: (string | number)[][] = [],
): (string | number)[][] {
  if (prefix.length >= 5) return out;
  if (Array.isArray(value)) {
    if (value.length > 0) {
      out.push([...prefix, 0]);
      fieldsOf(value[0], [...prefix, 0], out);
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      out.push([...prefix, key]);
      fieldsOf(inner, [...prefix, key], out);
    }
  }
  return out;
}

/** `value` as JSON text with the field at `path` replaced by the JSON text `replacement`. */
function replaceAt(value: unknown, path: (string | number)[], replacement: string): string {
  const marker = `\u0001FUZZ${Math.random().toString(36).slice(2)}\u0001`;
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let target: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) target = target[key] as Record<string | number, unknown>;
  target[path[path.length - 1]!] = marker;
  return JSON.stringify(copy).replace(JSON.stringify(marker), () => replacement);
}

/** Malformed WebSocket upgrades over raw TCP: each must get a 4xx status line, never a 5xx or a silent close. Malformed frames after a valid upgrade: `fuzz-frames.ts`. */
export async function fuzzWebSocket(baseUrl: string, headers: Record<string, string> = {}): Promise<FuzzFailure[]> {
  const url = new URL(baseUrl);
  const failures: FuzzFailure[] = [];
  const paths = [
    ...BAD_PATH_VALUES.map(([value, label]) => [`/channels/${value}/ws`, `channel id: ${label}`] as const),
    ['/channels/general/ws?after=%00', 'after: NUL'] as const,
    ['/channels/general/ws?after=-1', 'after: negative'] as const,
    ['/channels/general/ws?after=%E0%A4%A', 'after: truncated escape'] as const,
    ['/channels/%/ws?token=%zz', 'token: malformed escape'] as const,
    ['/nope/ws', 'unknown path'] as const,
  ];
  for (const [path, input] of paths) {
    const status = await upgradeStatus(url.hostname, Number(url.port || 80), path, headers);
    if (status === 101) continue;
    if (status >= 400 && status < 500) continue;
    failures.push({
      method: 'GET (upgrade)',
      path: path.slice(0, 200),
      input,
      status,
      problem: status === 0 ? 'no HTTP answer to the upgrade' : `answered ${status}`,
      body: '',
    });
  }
  return failures;
}

function upgradeStatus(host: string, port: number, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let received = '';
    const done = (status: number) => {
      socket.destroy();
      resolve(status);
    };
    const timer = setTimeout(() => done(Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0)), 5_000);
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      const match = /^HTTP\/1\.1 (\d{3})/.exec(received);
      if (match) {
        clearTimeout(timer);
        done(Number(match[1]));
      }
    });
    socket.on('error', () => {
      clearTimeout(timer);
      done(Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0));
    });
    socket.on('close', () => {
      clearTimeout(timer);
      done(Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0));
    });
    const extra = Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`,
    );
  });
}
