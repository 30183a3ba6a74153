import { TerminalError, ValidationError } from './errors.js';

/** The setting that names the address other machines reach the API at. */
export const PUBLIC_URL_SETTING = 'RUNLEDGER_PUBLIC_URL';

const WILDCARD = /^(0\.0\.0\.0|\[::\])$/;

/**
 * Checks a public base URL: absolute, http or https, with no query, fragment or credentials (they
 * would end up in every callback URL handed to a service). A path prefix is kept (a reverse proxy
 * serving the API under `/runledger`); the trailing slash is dropped so paths join with one.
 *
 * @example checkPublicUrl('https://x.example/runledger/') // 'https://x.example/runledger'
 */
export function checkPublicUrl(value: string, field = PUBLIC_URL_SETTING): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ValidationError(
      field,
      `must be an absolute http(s) URL such as https://runledger.example.com (got ${JSON.stringify(value)})`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ValidationError(field, `must be an http or https URL (got ${JSON.stringify(value)})`);
  if (url.search || value.includes('?'))
    throw new ValidationError(field, `must have no query string (got ${JSON.stringify(value)})`);
  if (url.hash || value.includes('#'))
    throw new ValidationError(field, `must have no fragment (got ${JSON.stringify(value)})`);
  if (url.username || url.password)
    throw new ValidationError(
      field,
      'must not carry credentials: every callback URL handed to a service would hold them',
    );
  if (WILDCARD.test(url.hostname))
    throw new ValidationError(
      field,
      `names the wildcard address ${url.hostname}, which no other machine can reach: give the address of this API or its load balancer`,
    );
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/**
 * The base URL this process may hand out for services to call back (`wait_for_callback` URLs,
 * HTTP agents' `report_url`), or undefined when it has none: the public URL when set; else a
 * server's own listening URL when that is a loopback address (one machine, a laptop) or a
 * specific address; never a wildcard address (0.0.0.0, ::), which names no machine, and never a
 * worker's (it listens nowhere).
 *
 * @example handedOutBase({ listeningUrl: 'http://0.0.0.0:8080' }) // undefined
 */
export function handedOutBase(p: {
  publicUrl?: string | undefined;
  listeningUrl?: string | undefined;
}): string | undefined {
  if (p.publicUrl !== undefined) return checkPublicUrl(p.publicUrl);
  if (p.listeningUrl === undefined) return undefined;
  return WILDCARD.test(new URL(p.listeningUrl).hostname) ? undefined : p.listeningUrl.replace(/\/+$/, '');
}

/**
 * `<base><path>`, or a TerminalError naming RUNLEDGER_PUBLIC_URL when there is no base: handing a
 * service a relative or wildcard URL would make it fail later, far from the cause, and no retry
 * fixes a missing setting (a person sets it, then retries the execution).
 *
 * @example publicUrlFor('https://x.example/runledger', '/callbacks/ex_1.s.mac', 'wait_for_callback step s')
 */
export function publicUrlFor(base: string | undefined, path: string, what: string): string {
  if (base) return `${base}${path}`;
  throw new TerminalError(
    `${what} needs a URL other machines can call, and this process has none: set ${PUBLIC_URL_SETTING} (or --public-url) to the address services reach the API at (a load balancer's, with any path prefix); a worker, and serve on a wildcard address such as 0.0.0.0, have no address of their own to hand out`,
  );
}
