import { lookup as dnsLookup } from 'node:dns/promises';
import { Agent as HttpAgent, request as plainRequest, type ClientRequest, type OutgoingHttpHeaders } from 'node:http';
import { Agent as TlsAgent, request as tlsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { TerminalError } from '../../errors.js';
import { isAllowed, refusedReason } from './address.js';
import type { HttpContext } from './http.js';

// One hop of an `http_request` on the wire: the URL checked, its host resolved and every address checked,
// a connection to the checked address, the response read. http.ts drives the hops (redirects, timeout).

/** Bytes of a response body kept; a longer body is cut there, its connection closed, and flagged `truncated`. */
export const MAX_RESPONSE_BYTES = 256 * 1024;

/** Statuses that send the request on to their `Location`. */
export const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** One hop of a request: where it goes and what it sends. */
export interface Attempt {
  method: string;
  url: URL;
  /** Lower-cased name → the name as given and the value. */
  headers: Map<string, [string, string]>;
  body: Buffer | undefined;
}

/** A response as read off the wire (its body cut at MAX_RESPONSE_BYTES). */
export interface Received {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  body: Buffer;
  truncated: boolean;
}

export interface Address {
  address: string;
  family: 4 | 6;
}

/** Refuses schemes other than http(s), and credentials, which would end up in journaled errors and Referer-like logs. */
export function checkUrl(url: URL): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw refused(url, `the scheme ${url.protocol} is not allowed (only http: and https:)`);
  }
  if (url.username !== '' || url.password !== '') {
    throw refused(url, 'credentials in the URL are not allowed (send an Authorization header)');
  }
}

/** Resolves the host once and checks every address; the first one is the one connected to. */
export async function resolveChecked(
  attempt: Attempt,
  ctx: HttpContext,
  signal: AbortSignal,
  stopped: () => Error,
): Promise<Address> {
  const { url } = attempt;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = isIP(host);
  let addresses: Address[];
  if (literal !== 0) {
    addresses = [{ address: host, family: literal === 4 ? 4 : 6 }];
  } else {
    const resolve = ctx.lookup ?? defaultLookup;
    try {
      addresses = await untilAborted(resolve(host), signal);
    } catch (error) {
      if (signal.aborted) throw stopped();
      throw new Error(`${describe(attempt)} failed: cannot resolve ${host} (${(error as Error).message})`, {
        cause: error,
      });
    }
    if (addresses.length === 0) throw new Error(`${describe(attempt)} failed: ${host} resolves to no address`);
  }
  for (const { address } of addresses) {
    if (isAllowed(url.hostname, address, ctx.allow)) continue;
    const reason = refusedReason(address);
    if (reason === null) continue;
    // the metadata service is never worth opening; a local or private service may be
    const hint = /metadata/.test(reason)
      ? ''
      : `; to allow it, start runledger with RUNLEDGER_HTTP_ALLOW=${url.hostname}`;
    throw refused(url, `${literal !== 0 ? `${host} is ${reason}` : `resolves to ${address}, ${reason}`}${hint}`);
  }
  return addresses[0]!;
}

async function defaultLookup(host: string): Promise<Address[]> {
  const found = await dnsLookup(host, { all: true, verbatim: true });
  return found.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * One exchange over a fresh connection (`agent: false`: a pooled socket could lead to another address
 * than the one just checked) to the pinned address, or with `reuse` over a kept-alive one to that very address
 * (see `pooled`). The Host header and the TLS servername stay the URL's host.
 */
export function send(
  attempt: Attempt,
  pinned: Address,
  signal: AbortSignal,
  stopped: () => Error,
  reuse = false,
): Promise<Received> {
  return new Promise<Received>((resolve, reject) => {
    if (signal.aborted) return reject(stopped());
    const { url } = attempt;
    const lookup: LookupFunction = (_host, options, callback) => {
      if (options.all) callback(null, [pinned]);
      else callback(null, pinned.address, pinned.family);
    };
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of attempt.headers.values()) headers[name] = value;
    if (attempt.body !== undefined) headers['Content-Length'] = attempt.body.length;
    let request: ClientRequest | undefined;
    let settled = false;
    const finish = (outcome: Received | Error): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
      // a whole answer leaves a pooled connection to its agent, for the next call to the same address
      if (!(reuse && !(outcome instanceof Error) && !outcome.truncated)) request?.destroy();
    };
    const onAbort = (): void => finish(stopped());
    const failed = (error: Error): void =>
      finish(new Error(`${describe(attempt)} failed: ${error.message}`, { cause: error }));
    signal.addEventListener('abort', onAbort, { once: true });
    request = (url.protocol === 'https:' ? tlsRequest : plainRequest)({
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port === '' ? undefined : Number(url.port),
      path: url.pathname + url.search,
      method: attempt.method,
      headers,
      lookup,
      agent: reuse ? pooled(url.protocol, pinned, url.port) : false,
    });
    request.on('error', failed);
    request.on('response', (response) => {
      response.on('error', failed);
      const received = (body: Buffer, truncated: boolean): Received => ({
        status: response.statusCode ?? 0,
        statusText: response.statusMessage ?? '',
        headers: joinHeaders(response.rawHeaders),
        body,
        truncated,
      });
      if (REDIRECTS.has(response.statusCode ?? 0) && response.headers.location !== undefined) {
        return finish(received(Buffer.alloc(0), false));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        const room = MAX_RESPONSE_BYTES - size;
        if (chunk.length > room) {
          chunks.push(chunk.subarray(0, room));
          finish(received(Buffer.concat(chunks), true));
          return;
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      response.on('end', () => finish(received(Buffer.concat(chunks), false)));
      response.on('close', () => {
        if (!response.complete) failed(new Error('the connection closed before the response ended'));
      });
    });
    request.end(attempt.body);
  });
}

const agents = new Map<string, HttpAgent>();

/**
 * A keep-alive agent for one checked address: its sockets all lead there, so a reused one goes where the check
 * allowed (the pool of a host name could lead to an address it resolved to before).
 */
function pooled(protocol: string, pinned: Address, port: string): HttpAgent {
  const key = `${protocol}//${pinned.address}:${port}`;
  let agent = agents.get(key);
  if (!agent) {
    // an idle socket closes before a server's usual keep-alive timeout (Node's 5 s), so a reuse seldom meets a closed one
    const options = { keepAlive: true, maxFreeSockets: 16, timeout: 4_000 };
    agent = protocol === 'https:' ? new TlsAgent(options) : new HttpAgent(options);
    agents.set(key, agent);
  }
  return agent;
}

/** Header names lower-cased; repeated headers (Set-Cookie too) joined with ', '. */
function joinHeaders(raw: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = raw[index]!.toLowerCase();
    const value = raw[index + 1]!;
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return headers;
}

/** How errors name a hop: `http_request POST https://…`. */
export function describe(attempt: Attempt): string {
  return `http_request ${attempt.method} ${attempt.url.href}`;
}

function refused(url: URL, reason: string): TerminalError {
  return new TerminalError(`http_request refused ${url.href}: ${reason}`);
}
