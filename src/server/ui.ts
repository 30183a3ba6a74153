import { readFile, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context, Hono } from 'hono';

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
 * Serves the dashboard at `/ui`: files of `dir` under `/ui/…`, and index.html for any other path
 * under `/ui` (the dashboard routes in the browser, so `/ui/runs/ex_…` can be shared and reloaded).
 * Mount it before the bearer check: the files hold no data, and the page asks for the token when
 * an API call answers 401. `/` redirects to `/ui/`.
 *
 * @example mountUi(app, uiDir());
 */
export function mountUi(app: Hono, dir: string | null): void {
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
  return c.body(body, 200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': cache, 'x-content-type-options': 'nosniff' });
}
