import { type Expression, parseTemplate } from './parse.js';

/**
 * The first `{{secrets.…}}` expression that a URL template puts in its authority (userinfo, host or
 * port), or null. There a secret cannot be kept: the URL parser lower-cases the host, cuts it at `/`,
 * `?`, `#`, `@` and `:`, punycodes and percent-decodes it, so error messages quote pieces no masking
 * can know (issue 49, defect 9), and the resolver is sent the host before any request is made.
 *
 * The authority is known only when the template starts with a literal scheme (`https://`, or `https:`
 * with any slashes, as the parser reads an http(s) URL); it ends at the first literal `/ \ ? #`. An
 * expression before it (`{{trigger.h}}{{secrets.k}}`) may end it too, so the one after still counts.
 * A URL that is one expression (`{{secrets.webhook_url}}`) is not judged: its pieces are masked.
 * Templates with errors give null (templateProblems reports them).
 *
 * @example secretInAuthority('http://{{secrets.x | upper}}.invalid/x') // '{{secrets.x | upper}}'
 * @example secretInAuthority('https://api.example.com/{{secrets.x}}') // null
 */
export function secretInAuthority(url: string): string | null {
  let parts: (string | Expression)[];
  try {
    parts = parseTemplate(url);
  } catch {
    return null;
  }
  const [first, ...rest] = parts;
  if (typeof first !== 'string') return null;
  // the parser drops tabs and newlines anywhere, and leading C0 controls and spaces
  const head = first.replace(/[\t\n\r]/g, '');
  let from = 0;
  while (from < head.length && head.charCodeAt(from) <= 0x20) from += 1;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:[/\\]*/.exec(head.slice(from));
  if (scheme === null || ends(head.slice(from + scheme[0].length))) return null;
  for (const part of rest) {
    if (typeof part === 'string') {
      if (ends(part)) return null;
    } else if (part.root === 'secrets') {
      return `{{${part.source}}}`;
    }
  }
  return null;
}

/** Whether literal text ends the authority of an http(s) URL. */
function ends(text: string): boolean {
  return /[/\\?#]/.test(text);
}

/**
 * What is wrong with an `http_request` URL that can be told before it runs: a literal URL must be
 * absolute http(s) without credentials; a templated one (`https://{{trigger.host}}/x`) is checked at
 * run time, but a scheme written before its first `{{` must still be http or https, and no secret may be in its host part.
 */
export function urlProblem(url: string): string | null {
  const open = url.indexOf('{{');
  if (open !== -1) {
    const scheme = /^\s*([A-Za-z][A-Za-z0-9+.-]*):/.exec(url.slice(0, open))?.[1];
    if (scheme !== undefined && !/^https?$/i.test(scheme))
      return `the scheme ${scheme.toLowerCase()}: is not allowed (only http: and https:)`;
    const secret = secretInAuthority(url);
    return secret === null
      ? null
      : `${secret} is in the host part (userinfo, host or port), where a URL parser lower-cases and cuts it into pieces no masking recognises, and sends it to DNS: put a secret in a header, the path or the query`;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an absolute http: or https: URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    return `the scheme ${parsed.protocol} is not allowed (only http: and https:)`;
  if (parsed.username !== '' || parsed.password !== '')
    return 'credentials in the URL are not allowed (send an Authorization header)';
  return null;
}
