import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { HttpError } from './errors.js';
import { checkHost, checkSameOrigin, parseAllowedOrigins, type RequestSource } from './origin.js';

/** The error `check` throws (its status, code and message), or null when it lets the request through. */
function refusal(check: () => void): { status: number; code: string; message: string } | null {
  try {
    check();
    return null;
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return { status: error.status, code: error.code, message: error.message };
  }
}

const from = (source: Partial<RequestSource>): RequestSource => ({
  scheme: 'http:',
  host: '127.0.0.1:8080',
  origin: undefined,
  fetchSite: undefined,
  ...source,
});

describe('RUNLEDGER_ALLOWED_ORIGINS', () => {
  it('reads comma-separated origins, normalised as browsers send them', () => {
    expect(parseAllowedOrigins(undefined)).toEqual([]);
    expect(parseAllowedOrigins(' https://OPS.example.com , http://localhost:5173/,https://a.example:443')).toEqual([
      'https://ops.example.com',
      'http://localhost:5173',
      'https://a.example',
    ]);
  });

  it.each([
    ['https://ops.example.com/ui'],
    ['ops.example.com'],
    ['*'],
    ['ftp://files.example'],
    ['https://ops.example.com?x=1'],
    ['https://user@ops.example.com'],
  ])('refuses %s, naming the variable', (entry) => {
    const error = (() => {
      try {
        parseAllowedOrigins(`https://fine.example,${entry}`);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toBe(
      `RUNLEDGER_ALLOWED_ORIGINS: '${entry}' is not an origin: write scheme://host[:port] with no path, e.g. https://ops.example.com`,
    );
  });
});

describe('the Host a server without a token answers', () => {
  it.each([['localhost:8080'], ['LOCALHOST'], ['127.0.0.1:8080'], ['127.3.2.1'], ['[::1]:8080'], ['ops.example.com']])(
    'answers %s',
    (host) => {
      expect(refusal(() => checkHost(host, ['https://ops.example.com']))).toBeNull();
    },
  );

  it.each([
    ['evil.example:8080'],
    ['localhost.evil.example'],
    ['127.0.0.1.evil.example'],
    ['evil.example@127.0.0.1'],
    ['0.0.0.0:8080'],
    ['[::2]'],
    [''],
  ])('refuses %s with 421, naming it and the setting', (host) => {
    expect(refusal(() => checkHost(host, ['https://ops.example.com']))).toMatchObject({
      status: 421,
      code: 'host_refused',
      message: expect.stringContaining(`Host '${host}'`),
    });
    expect(refusal(() => checkHost(host, []))!.message).toContain('RUNLEDGER_ALLOWED_ORIGINS');
  });

  it('lets a request with no Host through: no browser sends one', () => {
    expect(refusal(() => checkHost(undefined, []))).toBeNull();
  });
});

describe('a state-changing request from a web page', () => {
  it('passes from the server’s own origin, an allowed one, or outside a browser', () => {
    expect(
      refusal(() => checkSameOrigin(from({ origin: 'http://127.0.0.1:8080', fetchSite: 'same-origin' }), [], 'POST')),
    ).toBeNull();
    expect(
      refusal(() => checkSameOrigin(from({ host: 'localhost:8080', origin: 'http://localhost:8080' }), [], 'POST')),
    ).toBeNull();
    expect(
      refusal(() =>
        checkSameOrigin(
          from({ origin: 'https://ops.example.com', fetchSite: 'cross-site' }),
          ['https://ops.example.com'],
          'POST',
        ),
      ),
    ).toBeNull();
    expect(refusal(() => checkSameOrigin(from({}), [], 'POST'))).toBeNull();
    expect(refusal(() => checkSameOrigin(from({ fetchSite: 'none' }), [], 'POST'))).toBeNull();
  });

  it.each([
    ['another site', { origin: 'https://evil.example' }],
    ['another port of the same host', { origin: 'http://127.0.0.1:3000', fetchSite: 'same-site' }],
    ['the other loopback name', { origin: 'http://localhost:8080' }],
    ['https instead of http', { origin: 'https://127.0.0.1:8080' }],
    ['an opaque origin', { origin: 'null' }],
  ])('refuses %s with 403 naming the origin and the setting', (_, source) => {
    const refused = refusal(() => checkSameOrigin(from(source), ['https://ops.example.com'], 'POST'));
    expect(refused).toEqual({
      status: 403,
      code: 'cross_site_refused',
      message: `POST from origin '${source.origin}' refused: a web page may act only from this server's own origin (http://127.0.0.1:8080) or one in RUNLEDGER_ALLOWED_ORIGINS; add it there to allow it, or require RUNLEDGER_TOKEN`,
    });
  });

  it.each([['cross-site'], ['same-site']])('refuses Sec-Fetch-Site: %s without an Origin', (site) => {
    expect(refusal(() => checkSameOrigin(from({ fetchSite: site }), [], 'DELETE'))).toMatchObject({
      status: 403,
      code: 'cross_site_refused',
      message: expect.stringContaining(`Sec-Fetch-Site: ${site}`),
    });
  });
});
