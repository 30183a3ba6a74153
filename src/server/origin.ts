import type { IncomingMessage } from 'node:http';
import { ValidationError } from '../errors.js';
import { HttpError } from './errors.js';

/**
 * Which browser requests a server without a token answers. Such a server trusts every process of
 * its machine (they can reach the loopback port), but not every web page its user opens: a page of
 * any origin can send simple requests (a form, a `no-cors` fetch, a WebSocket) to `127.0.0.1`, and a
 * page whose DNS name was rebound to `127.0.0.1` reads the answers too. See docs/security.md.
 */

/** The methods that change state: a browser sends them cross-site without asking first (a form, a no-cors fetch). */
export const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What a request says about where it was sent from, read the same way from a fetch Request and a Node upgrade. */
export interface RequestSource {
  /** `http:` or `https:`: how this server was reached, for its own origin. */
  scheme: string;
  /** The `Host` header; absent only outside a browser (HTTP/1.0, an in-process `app.fetch`). */
  host: string | undefined;
  origin: string | undefined;
  /** `Sec-Fetch-Site`: `same-origin`, `same-site`, `cross-site` or `none`, sent by current browsers. */
  fetchSite: string | undefined;
}

const LOOPBACK_HOST = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/;
const SETTING = 'RUNLEDGER_ALLOWED_ORIGINS';

/**
 * The origins of a comma-separated list (`https://ops.example.com,http://localhost:5173`), each
 * `scheme://host[:port]` with no path; a bad entry is a ValidationError naming `variable`.
 *
 * @example parseAllowedOrigins(process.env.RUNLEDGER_ALLOWED_ORIGINS) // ['https://ops.example.com']
 */
export function parseAllowedOrigins(value: string | undefined, variable = SETTING): string[] {
  const entries = (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  return entries.map((entry) => {
    let url: URL | null = null;
    try {
      url = new URL(entry);
    } catch {}
    // a lone trailing slash is how URLs are often copied; a path, query or user is never in an Origin header
    if (!url || !/^https?:$/.test(url.protocol) || url.pathname !== '/' || /[?#@]/.test(entry)) {
      throw new ValidationError(
        variable,
        `'${entry}' is not an origin: write scheme://host[:port] with no path, e.g. https://ops.example.com`,
      );
    }
    return url.origin;
  });
}

/** The origin of a URL (`RUNLEDGER_PUBLIC_URL` may carry a path: its origin is what browsers send). */
export function originOf(url: string): string {
  return new URL(url).origin;
}

/**
 * Refuses (421) a request to a server without a token whose `Host` is not a loopback name or
 * address, nor the host of an allowed origin: a page whose DNS name now resolves to 127.0.0.1
 * sends its own name, and would otherwise read every answer as same-origin.
 */
export function checkHost(host: string | undefined, allowedOrigins: readonly string[]): void {
  if (host === undefined) return;
  const hostname = hostnameOf(host);
  if (
    hostname !== null &&
    (LOOPBACK_HOST.test(hostname) || allowedOrigins.some((origin) => new URL(origin).hostname === hostname))
  )
    return;
  throw new HttpError(
    421,
    'host_refused',
    `Host '${host}' is not a name of this server: without RUNLEDGER_TOKEN it answers only localhost, 127.0.0.0/8 and [::1] (a web page whose DNS name was pointed at this machine would send its own name); to serve another name, add its origin to ${SETTING}`,
  );
}

/**
 * Refuses (403) a request a browser sent from another origin: an `Origin` that is neither this
 * server's own (the scheme and `Host` it was reached by) nor allowed, or without one, a
 * `Sec-Fetch-Site` of `cross-site` or `same-site` (another port on localhost is the same site).
 * A request with neither header does not come from a web page: curl, the CLI, SDKs, services.
 */
export function checkSameOrigin(source: RequestSource, allowedOrigins: readonly string[], what: string): void {
  if (source.origin !== undefined) {
    const origin = normalOrigin(source.origin);
    const own = source.host !== undefined ? normalOrigin(`${source.scheme}//${source.host}`) : null;
    if (origin !== null && (origin === own || allowedOrigins.includes(origin))) return;
    throw new HttpError(
      403,
      'cross_site_refused',
      `${what} from origin '${source.origin}' refused: a web page may act only from this server's own origin${own ? ` (${own})` : ''} or one in ${SETTING}; add it there to allow it, or require RUNLEDGER_TOKEN`,
    );
  }
  if (source.fetchSite === 'cross-site' || source.fetchSite === 'same-site') {
    throw new HttpError(
      403,
      'cross_site_refused',
      `${what} refused: the browser sent it from another site (Sec-Fetch-Site: ${source.fetchSite}) without an Origin; allowed origins (${SETTING}) must send theirs`,
    );
  }
}

/** A request's source from its fetch-style headers; the scheme from its URL. */
export function sourceOf(request: Request): RequestSource {
  const header = (name: string) => request.headers.get(name) ?? undefined;
  return {
    scheme: new URL(request.url).protocol,
    host: header('host'),
    origin: header('origin'),
    fetchSite: header('sec-fetch-site'),
  };
}

/**
 * A WebSocket upgrade to a server without a token: the same rules as a state-changing request (a
 * socket reads a channel's history and posts to it), whatever its method. Browsers always send
 * `Origin` on an upgrade, and cross-origin sockets need no CORS consent: this is the only check.
 */
export function checkUpgrade(request: IncomingMessage, allowedOrigins: readonly string[]): void {
  const header = (name: string) => {
    const value = request.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const source = {
    scheme: 'encrypted' in request.socket && request.socket.encrypted ? 'https:' : 'http:',
    host: header('host'),
    origin: header('origin'),
    fetchSite: header('sec-fetch-site'),
  };
  checkHost(source.host, allowedOrigins);
  checkSameOrigin(source, allowedOrigins, 'WebSocket upgrade');
}

function hostnameOf(host: string): string | null {
  // a name, an IPv4 or a bracketed IPv6 address, and a port: nothing the URL parser would read as a user or a path
  if (!/^[\w.-]+(:\d*)?$|^\[[\da-f:.]+\](:\d*)?$/i.test(host)) return null;
  try {
    return new URL(`http://${host}`).hostname;
  } catch {
    return null;
  }
}

/** `null` (an opaque origin: a sandboxed page, a file) and anything unparsable match nothing. */
function normalOrigin(origin: string): string | null {
  try {
    const url = new URL(origin);
    return /^https?:$/.test(url.protocol) ? url.origin : null;
  } catch {
    return null;
  }
}
