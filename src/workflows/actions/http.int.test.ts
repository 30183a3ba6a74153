import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import dns from 'node:dns';
import net, { type AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { RetryAfterError, TerminalError } from '../../errors.js';
import { httpRequest, type HttpContext, type HttpRequestConfig } from './http.js';
import { MAX_RESPONSE_BYTES } from './http-send.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Local {
  port: number;
  base: string;
  seen: Seen[];
}

type Handler = (request: Seen, response: ServerResponse) => void;

const servers: { close(): void; closeAllConnections(): void }[] = [];

/** A `node:http` server on 127.0.0.1 at a free port that records every request it gets. */
async function serve(handler: Handler): Promise<Local> {
  const seen: Seen[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const record = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      seen.push(record);
      handler(record, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  const { port } = server.address() as AddressInfo;
  return { port, base: `http://127.0.0.1:${port}`, seen };
}

function context(overrides: Partial<HttpContext> = {}): HttpContext {
  return { idempotencyKey: 'run_1:step_1', signal: new AbortController().signal, allow: ['127.0.0.1'], ...overrides };
}

async function failure(config: HttpRequestConfig, ctx: HttpContext = context()): Promise<Error> {
  const error = await httpRequest(config, ctx).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof Error)) throw new Error(`expected httpRequest to fail, got ${String(error)}`);
  return error;
}

/**
 * Every outgoing connection passes here: only the loopback server (by address or through the fake
 * `pinned.test`) may be reached, and no name goes to DNS, so a bug cannot send a packet elsewhere.
 */
let connects: MockInstance;
beforeEach(() => {
  const lookup = dns.lookup;
  vi.spyOn(dns, 'lookup').mockImplementation(function (this: unknown, ...args: unknown[]) {
    if (net.isIP(String(args[0])) === 0) throw new Error(`the test tried to resolve ${String(args[0])}`);
    return lookup.apply(this, args as Parameters<typeof lookup>);
  } as typeof lookup);
  const connect = net.Socket.prototype.connect;
  connects = vi.spyOn(net.Socket.prototype, 'connect').mockImplementation(function (
    this: net.Socket,
    ...args: unknown[]
  ) {
    const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
    const host = typeof first === 'object' && first !== null ? (first as { host?: unknown }).host : args[1];
    if (host !== '127.0.0.1' && host !== 'pinned.test') throw new Error(`the test tried to connect to ${String(host)}`);
    return connect.apply(this, args as Parameters<typeof connect>);
  });
});

afterEach(() => {
  vi.restoreAllMocks();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

describe('httpRequest against a local server', () => {
  it('sends a JSON body and returns status, lower-cased headers and the parsed body', async () => {
    const local = await serve((request, response) => {
      response.setHeader('X-Custom-Header', 'Value');
      response.setHeader('X-Multi', ['a', 'b']);
      response.setHeader('Content-Type', 'application/json; charset=utf-8');
      response.writeHead(201).end(JSON.stringify({ received: JSON.parse(request.body) as unknown }));
    });
    const out = await httpRequest(
      { method: 'POST', url: `${local.base}/orders?x=1`, body: { sku: 'A1', qty: [1, 2] } },
      context(),
    );
    expect(out).toEqual({
      status: 201,
      headers: expect.objectContaining({
        'x-custom-header': 'Value',
        'x-multi': 'a, b',
        'content-type': 'application/json; charset=utf-8',
      }),
      body: { received: { sku: 'A1', qty: [1, 2] } },
    });
    expect(out).not.toHaveProperty('truncated');
    const [request] = local.seen;
    expect(request).toMatchObject({ method: 'POST', url: '/orders?x=1', body: '{"sku":"A1","qty":[1,2]}' });
    expect(request?.headers).toMatchObject({
      'content-type': 'application/json',
      'content-length': '24',
      'idempotency-key': 'run_1:step_1',
      host: `127.0.0.1:${local.port}`,
    });
  });

  it('sends numbers and booleans as JSON and a string as text', async () => {
    const local = await serve((request, response) => {
      response.setHeader('Content-Type', 'text/plain; charset=utf-8');
      response.end(`${request.headers['content-type']}|${request.body}`);
    });
    expect((await httpRequest({ method: 'PUT', url: local.base, body: 42 }, context())).body).toBe(
      'application/json|42',
    );
    expect((await httpRequest({ method: 'PATCH', url: local.base, body: false }, context())).body).toBe(
      'application/json|false',
    );
    expect((await httpRequest({ method: 'POST', url: local.base, body: 'héllo {not json}' }, context())).body).toBe(
      'text/plain; charset=utf-8|héllo {not json}',
    );
  });

  it('keeps a content-type and an Idempotency-Key the user set', async () => {
    const local = await serve((_request, response) => response.end('ok'));
    await httpRequest(
      {
        method: 'POST',
        url: local.base,
        headers: { 'Content-Type': 'application/x-ndjson', 'idempotency-key': 'mine', Authorization: 'Bearer t' },
        body: '{}\n',
      },
      context(),
    );
    expect(local.seen[0]?.headers).toMatchObject({
      'content-type': 'application/x-ndjson',
      'idempotency-key': 'mine',
      authorization: 'Bearer t',
    });
  });

  it('falls back to text when a JSON response does not parse, and parses +json types', async () => {
    const local = await serve((request, response) => {
      if (request.url === '/broken') response.setHeader('Content-Type', 'application/json').end('{"half":');
      else response.setHeader('Content-Type', 'application/problem+json').end('{"title":"x"}');
    });
    expect((await httpRequest({ method: 'GET', url: `${local.base}/broken` }, context())).body).toBe('{"half":');
    expect((await httpRequest({ method: 'GET', url: `${local.base}/problem` }, context())).body).toEqual({
      title: 'x',
    });
  });

  it('truncates a body over 256 KiB and flags it; exactly 256 KiB is whole', async () => {
    const local = await serve((request, response) => {
      response.setHeader('Content-Type', 'application/json');
      if (request.url === '/exact') return void response.end(`"${'a'.repeat(MAX_RESPONSE_BYTES - 2)}"`);
      // an endless body: the client must stop reading and close the connection
      const chunk = 'b'.repeat(64 * 1024);
      const write = (): void => {
        while (response.write(chunk));
        response.once('drain', write);
      };
      write();
    });
    const big = await httpRequest({ method: 'GET', url: `${local.base}/big` }, context());
    expect(big.truncated).toBe(true);
    expect(big.body).toBe('b'.repeat(MAX_RESPONSE_BYTES));
    const exact = await httpRequest({ method: 'GET', url: `${local.base}/exact` }, context());
    expect(exact.truncated).toBeUndefined();
    expect(exact.body).toBe('a'.repeat(MAX_RESPONSE_BYTES - 2));
  });
});

describe('httpRequest failures and retries', () => {
  it('throws a plain, retried Error on 5xx naming method, URL and status', async () => {
    const local = await serve((_request, response) => response.writeHead(503).end('try later'));
    const error = await failure({ method: 'DELETE', url: `${local.base}/x/1` });
    expect(error).not.toBeInstanceOf(TerminalError);
    expect(error).not.toBeInstanceOf(RetryAfterError);
    expect(error.message).toBe(`http_request DELETE ${local.base}/x/1 failed: 503 Service Unavailable: try later`);
  });

  it('throws a plain Error on 408', async () => {
    const local = await serve((_request, response) => response.writeHead(408).end());
    const error = await failure({ method: 'GET', url: local.base });
    expect(error.constructor).toBe(Error);
    expect(error.message).toMatch(/ 408 /);
  });

  it('honours Retry-After on 429 as seconds, as an HTTP-date, and as 0 when absent', async () => {
    const inThree = new Date(Date.now() + 3000).toUTCString();
    const local = await serve((request, response) => {
      if (request.url === '/seconds') response.setHeader('Retry-After', '2');
      if (request.url === '/date') response.setHeader('Retry-After', inThree);
      response.writeHead(429).end();
    });
    const seconds = await failure({ method: 'GET', url: `${local.base}/seconds` });
    expect(seconds).toBeInstanceOf(RetryAfterError);
    expect((seconds as RetryAfterError).retryAfterMs).toBe(2000);
    expect(seconds.message).toMatch(/429 Too Many Requests/);
    const date = (await failure({ method: 'GET', url: `${local.base}/date` })) as RetryAfterError;
    expect(date.retryAfterMs).toBeGreaterThan(1000);
    expect(date.retryAfterMs).toBeLessThanOrEqual(3000);
    expect(((await failure({ method: 'GET', url: `${local.base}/none` })) as RetryAfterError).retryAfterMs).toBe(0);
  });

  it('throws a TerminalError on 404 with the status and the start of the body', async () => {
    const local = await serve((_request, response) => response.writeHead(404).end(`no such order\n${'x'.repeat(500)}`));
    const error = await failure({ method: 'GET', url: `${local.base}/orders/9` });
    expect(error).toBeInstanceOf(TerminalError);
    expect(error.message).toBe(
      `http_request GET ${local.base}/orders/9 failed: 404 Not Found: no such order ${'x'.repeat(200 - 'no such order '.length)}`,
    );
  });

  it('refuses a header value with CR, LF or NUL, naming the header, before sending', async () => {
    const local = await serve((_request, response) => response.end());
    for (const value of ['a\r\nInjected: 1', 'a\nb', 'a\0b']) {
      const error = await failure({ method: 'GET', url: local.base, headers: { 'X-Trace': value } });
      expect(error).toBeInstanceOf(TerminalError);
      expect(error.message).toBe(`http_request: header 'X-Trace' contains CR, LF or NUL`);
    }
    expect(local.seen).toEqual([]);
  });

  it('times out with a plain Error', async () => {
    const local = await serve(() => undefined);
    const started = Date.now();
    const error = await failure({ method: 'GET', url: local.base, timeout_seconds: 0.2 });
    expect(error.constructor).toBe(Error);
    expect(error.message).toBe(`http_request GET ${local.base}/ timed out after 0.2 s`);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('aborts on the context signal', async () => {
    const local = await serve(() => undefined);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const error = await failure({ method: 'GET', url: local.base }, context({ signal: controller.signal }));
    expect(error.constructor).toBe(Error);
    expect(error.message).toBe(`http_request GET ${local.base}/ was aborted`);
  });

  it('throws a plain Error when the connection is refused', async () => {
    const local = await serve(() => undefined);
    for (const server of servers.splice(0)) server.close();
    const error = await failure({ method: 'GET', url: local.base });
    expect(error.constructor).toBe(Error);
    expect(error.message).toMatch(new RegExp(`^http_request GET ${local.base}/ failed: .*ECONNREFUSED`));
  });

  it('refuses bad config with a TerminalError', async () => {
    const cases: [unknown, RegExp][] = [
      [
        { method: 'FETCH', url: 'http://127.0.0.1/' },
        /method must be one of GET, POST, PUT, PATCH, DELETE \(got "FETCH"\)/,
      ],
      [{ method: 'GET', url: 'not a url' }, /url must be an absolute URL/],
      [
        { method: 'GET', url: 'http://127.0.0.1/', timeout_seconds: 301 },
        /timeout_seconds must be a number in \(0, 300\]/,
      ],
      [{ method: 'GET', url: 'http://127.0.0.1/', timeout_seconds: 0 }, /timeout_seconds/],
      [{ method: 'GET', url: 'http://127.0.0.1/', body: { a: 1 } }, /a GET request cannot carry a body/],
      [{ method: 'POST', url: 'http://127.0.0.1/', body: { n: 1n } }, /the body cannot be sent as JSON/],
      [
        { method: 'GET', url: 'http://127.0.0.1/', headers: { Host: 'other' } },
        /header 'Host' is set by http_request itself/,
      ],
      [
        { method: 'GET', url: 'http://127.0.0.1/', headers: { 'Bad Name': 'x' } },
        /'Bad Name' is not a valid header name/,
      ],
    ];
    for (const [config, message] of cases) {
      const error = await failure(config as HttpRequestConfig);
      expect(error).toBeInstanceOf(TerminalError);
      expect(error.message).toMatch(message);
    }
    expect(connects).not.toHaveBeenCalled();
  });
});

describe('redirects', () => {
  it('follows up to 5 redirects, re-sending a 307 with its body and turning a 303 into a GET', async () => {
    const local = await serve((request, response) => {
      const hop = Number(request.url?.slice(1) || '0');
      if (hop === 1) return void response.writeHead(307, { Location: '/2' }).end();
      if (hop === 2) return void response.writeHead(303, { Location: `http://127.0.0.1:${local.port}/3` }).end();
      if (hop < 6) return void response.writeHead(302, { Location: `/${hop + 1}` }).end();
      response.end(`final ${request.method}`);
    });
    const out = await httpRequest({ method: 'POST', url: `${local.base}/1`, body: { a: 1 } }, context());
    expect(out).toMatchObject({ status: 200, body: 'final GET' });
    expect(local.seen.map(({ method, url, body }) => `${method} ${url} ${body}`)).toEqual([
      'POST /1 {"a":1}',
      'POST /2 {"a":1}',
      'GET /3 ',
      'GET /4 ',
      'GET /5 ',
      'GET /6 ',
    ]);
    expect(local.seen[2]?.headers['content-type']).toBeUndefined();
    expect(local.seen.every((seen) => seen.headers['idempotency-key'] === 'run_1:step_1')).toBe(true);
  });

  it('gives up after 5 redirects with a TerminalError', async () => {
    const local = await serve((request, response) => response.writeHead(301, { Location: `${request.url}x` }).end());
    const error = await failure({ method: 'GET', url: `${local.base}/` });
    expect(error).toBeInstanceOf(TerminalError);
    expect(error.message).toMatch(/more than 5 redirects/);
    expect(local.seen).toHaveLength(6);
  });

  it('turns a 302 after POST into a GET and drops Authorization on another origin', async () => {
    const target = await serve((request, response) => response.end(request.method));
    const origin = await serve((_request, response) =>
      response.writeHead(302, { Location: `${target.base}/landing` }).end(),
    );
    const out = await httpRequest(
      { method: 'POST', url: origin.base, body: 'x', headers: { Authorization: 'Bearer secret' } },
      context(),
    );
    expect(out.body).toBe('GET');
    expect(origin.seen[0]?.headers.authorization).toBe('Bearer secret');
    expect(target.seen[0]?.headers.authorization).toBeUndefined();
  });

  it('refuses a redirect from an allowlisted host to the metadata address without connecting there', async () => {
    const local = await serve((_request, response) =>
      response.writeHead(302, { Location: 'http://169.254.169.254/latest/meta-data/' }).end(),
    );
    const error = await failure({ method: 'GET', url: local.base });
    expect(error).toBeInstanceOf(TerminalError);
    expect(error.message).toBe(
      'http_request refused http://169.254.169.254/latest/meta-data/: 169.254.169.254 is a link-local address (the cloud metadata service)',
    );
    expect(connects).toHaveBeenCalledTimes(1);
  });

  it('refuses a redirect to another scheme', async () => {
    const local = await serve((_request, response) =>
      response.writeHead(301, { Location: 'file:///etc/passwd' }).end(),
    );
    const error = await failure({ method: 'GET', url: local.base });
    expect(error).toBeInstanceOf(TerminalError);
    expect(error.message).toBe(
      'http_request refused file:///etc/passwd: the scheme file: is not allowed (only http: and https:)',
    );
  });

  it('re-resolves and re-checks the host of every hop', async () => {
    const lookup = vi.fn(async (host: string) => [
      { address: host === 'metadata.test' ? '169.254.169.254' : '127.0.0.1', family: 4 as const },
    ]);
    const local = await serve((_request, response) =>
      response.writeHead(308, { Location: 'http://metadata.test/' }).end(),
    );
    const error = await failure({ method: 'GET', url: local.base }, context({ lookup }));
    expect(error.message).toBe(
      'http_request refused http://metadata.test/: resolves to 169.254.169.254, a link-local address (the cloud metadata service)',
    );
    expect(lookup).toHaveBeenCalledWith('metadata.test');
    expect(connects).toHaveBeenCalledTimes(1);
  });
});

describe('the SSRF guard', () => {
  it('refuses the loopback server without an allowlist, and the server sees nothing', async () => {
    const local = await serve((_request, response) => response.end());
    const error = await failure({ method: 'GET', url: `${local.base}/` }, context({ allow: [] }));
    expect(error).toBeInstanceOf(TerminalError);
    expect(error.message).toBe(
      `http_request refused ${local.base}/: 127.0.0.1 is a loopback address; to allow it, start runledger with RUNLEDGER_HTTP_ALLOW=127.0.0.1`,
    );
    expect(local.seen).toEqual([]);
    expect(connects).not.toHaveBeenCalled();
  });

  it.each([
    ['http://2130706433/', 'http://127.0.0.1/', /127\.0\.0\.1 is a loopback address/],
    ['http://0x7f000001/', 'http://127.0.0.1/', /loopback/],
    ['http://0177.0.0.1/', 'http://127.0.0.1/', /loopback/],
    ['http://127.1/', 'http://127.0.0.1/', /loopback/],
    [
      'http://[::ffff:7f00:1]/',
      'http://[::ffff:7f00:1]/',
      /::ffff:7f00:1 is a loopback address \(IPv4-mapped 127\.0\.0\.1\)/,
    ],
    ['http://[::1]:8080/', 'http://[::1]:8080/', /::1 is a loopback address/],
    ['https://10.0.0.5/', 'https://10.0.0.5/', /10\.0\.0\.5 is a private address/],
    ['http://[fe80::1]/', 'http://[fe80::1]/', /link-local/],
    ['file:///etc/passwd', 'file:///etc/passwd', /the scheme file: is not allowed/],
    ['ftp://example.com/', 'ftp://example.com/', /the scheme ftp: is not allowed/],
    ['gopher://example.com/', 'gopher://example.com/', /the scheme gopher: is not allowed/],
    ['data:text/plain,hi', 'data:text/plain,hi', /the scheme data: is not allowed/],
    ['http://user:pass@example.com/', 'http://user:pass@example.com/', /credentials in the URL are not allowed/],
  ])('refuses %s before any connection', async (url, shown, reason) => {
    const lookup = vi.fn(async () => [{ address: '93.184.216.34', family: 4 as const }]);
    const error = await failure({ method: 'GET', url }, context({ allow: [], lookup }));
    expect(error).toBeInstanceOf(TerminalError);
    expect(error.message.startsWith(`http_request refused ${shown}: `)).toBe(true);
    expect(error.message).toMatch(reason);
    expect(lookup).not.toHaveBeenCalled();
    expect(connects).not.toHaveBeenCalled();
  });

  it('refuses a name that resolves to a private address, or to one among several', async () => {
    const lookup = vi.fn(async (host: string) =>
      host === 'rebind.test'
        ? [{ address: '10.0.0.1', family: 4 as const }]
        : [
            { address: '93.184.216.34', family: 4 as const },
            { address: 'fd00::7', family: 6 as const },
          ],
    );
    const rebind = await failure({ method: 'GET', url: 'http://rebind.test/' }, context({ lookup }));
    expect(rebind).toBeInstanceOf(TerminalError);
    expect(rebind.message).toBe(
      'http_request refused http://rebind.test/: resolves to 10.0.0.1, a private address; to allow it, start runledger with RUNLEDGER_HTTP_ALLOW=rebind.test',
    );
    const mixed = await failure({ method: 'GET', url: 'http://mixed.test/' }, context({ lookup }));
    expect(mixed.message).toBe(
      'http_request refused http://mixed.test/: resolves to fd00::7, a unique-local address; to allow it, start runledger with RUNLEDGER_HTTP_ALLOW=mixed.test',
    );
    expect(connects).not.toHaveBeenCalled();
  });

  it('checks a public address and goes on to connect (stopped here before the connection)', async () => {
    const controller = new AbortController();
    const lookup = vi.fn(async () => {
      controller.abort();
      return [{ address: '93.184.216.34', family: 4 as const }];
    });
    const error = await failure(
      { method: 'GET', url: 'https://public.test/' },
      context({ allow: [], lookup, signal: controller.signal }),
    );
    expect(error).not.toBeInstanceOf(TerminalError);
    expect(error.message).toBe('http_request GET https://public.test/ was aborted');
    expect(lookup).toHaveBeenCalledWith('public.test');
    expect(connects).not.toHaveBeenCalled();
  });

  it('connects to the address it checked, keeping the hostname in the Host header', async () => {
    const local = await serve((request, response) => response.end(request.headers.host));
    const lookup = vi.fn(async () => [{ address: '127.0.0.1', family: 4 as const }]);
    const out = await httpRequest(
      { method: 'GET', url: `http://pinned.test:${local.port}/` },
      context({ allow: ['127.0.0.1'], lookup }),
    );
    expect(out.body).toBe(`pinned.test:${local.port}`);
    expect(local.seen[0]?.headers.host).toBe(`pinned.test:${local.port}`);
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('opens a host by name, and a resolved address by CIDR', async () => {
    const local = await serve((_request, response) => response.end('ok'));
    const lookup = vi.fn(async () => [{ address: '127.0.0.1', family: 4 as const }]);
    const url = `http://pinned.test:${local.port}/`;
    expect((await httpRequest({ method: 'GET', url }, context({ allow: ['PINNED.test'], lookup }))).body).toBe('ok');
    expect((await httpRequest({ method: 'GET', url }, context({ allow: ['127.0.0.0/8'], lookup }))).body).toBe('ok');
    const error = await failure({ method: 'GET', url }, context({ allow: ['other.test', '10.0.0.0/8'], lookup }));
    expect(error.message).toBe(
      `http_request refused ${url}: resolves to 127.0.0.1, a loopback address; to allow it, start runledger with RUNLEDGER_HTTP_ALLOW=${new URL(url).hostname}`,
    );
    expect(local.seen).toHaveLength(2);
  });
});
