import { readFile, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context, Hono, MiddlewareHandler } from 'hono';

/** Where `vite build` puts the dashboard: `dist/ui`, beside the compiled server (or two floors up from `src/server`). */
export function uiDir(): string | null {
  for (const candidate of ['../ui', '../../dist/ui']) {
    const dir = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(join(dir, 'index.html'))) return dir;
  }
  return null;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

/** Built assets carry a content hash in their name: cached for a year. index.html is checked every time. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

/**
 * Headers of every dashboard response (the page, its assets, a 404, a redirect). No other site may
 * frame the dashboard, so none can lay its approve, cancel or bulk buttons under a decoy
 * (clickjacking): `frame-ancestors 'none'`, and X-Frame-Options for browsers before CSP 2. The page
 * loads only its own script and stylesheet, and talks only to its own origin: fetch, SSE and the
 * channel WebSocket are all `'self'` (CSP 3 counts ws: and wss: of the same host as `'self'`; the
 * channel page is checked in Chromium). The favicon is a `data:` URL in index.html. No inline style
 * or script is needed (preact sets styles through the DOM). A referrer only to the same origin, not
 * none: under `no-referrer` the Fetch standard sends `Origin: null` with a same-origin POST (Chromium
 * 156 sends the origin anyway), and the server refuses state changes from another origin.
 */
export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

/**
 * Serves the dashboard at `/ui`: files of `dir` under `/ui/…`, and index.html for any other path
 * under `/ui` (the dashboard routes in the browser, so `/ui/runs/ex_…` can be shared and reloaded).
 * Mount it before the bearer check: the files hold no data, and the page asks for the token when
 * an API call answers 401. `/` redirects to `/ui/`.
 *
 * @example mountUi(app, uiDir());
 */
export function mountUi(app: Hono, dir: string | null): void {
  const headers: MiddlewareHandler = async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(DASHBOARD_HEADERS)) c.res.headers.set(name, value);
  };
  app.use('/', headers);
  app.use('/ui', headers);
  app.use('/ui/*', headers);
  app.get('/', (c) => c.redirect('/ui/', 302));
  app.get('/ui', (c) => c.redirect('/ui/', 301));
  app.get('/ui/*', (c) => serveUi(c, dir));
}

async function serveUi(c: Context, dir: string | null): Promise<Response> {
  if (dir === null) return c.text('the dashboard is not built: run `npm run build`', 404);
  let relative: string;
  try {
    relative = decodeURIComponent(c.req.path.slice('/ui/'.length));
  } catch {
    return c.text('not found', 404);
  }
  const file = normalize(join(dir, relative));
  if (relative !== '' && file.startsWith(dir + sep) && (await isFile(file))) {
    const hashed = relative.startsWith('assets/');
    return send(c, file, hashed ? IMMUTABLE : REVALIDATE);
  }
  // a missing asset is a 404, not the page: a stale index.html must not load HTML as script
  if (relative.startsWith('assets/') || extname(relative) !== '') return c.text('not found', 404);
  return send(c, join(dir, 'index.html'), REVALIDATE);
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

async function send(c: Context, file: string, cache: string): Promise<Response> {
  const body = await readFile(file);
  return c.body(body, 200, {
    'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
    'cache-control': cache,
  });
}
