import { createHash } from 'node:crypto';
import { ValidationError } from '../../errors.js';
import type { Store } from '../../storage/store.js';

/**
 * Versions of code workflows. A run records the version it started on; its passes are tasks
 * tagged `<workflow>@<version>`, and a worker claims only the tags of the versions it has. So a
 * deploy never replays a run on code it did not start with: the run waits until a worker with its
 * version is up (see `liveTags`).
 */

/**
 * The default version: the first 12 hex digits of the sha256 of the function's source, as tokens.
 * The same code built by different tools (tsc keeps formatting and comments, esbuild reprints and
 * minifies whitespace, rewrites 60_000 as 6e4) must get one version, so the hash reads the words,
 * numbers and operators of the source, not its layout, comments, quotes or brackets. An edit
 * that only swaps brackets or quotes keeps the version: give one yourself for such a change.
 */
export function sourceVersion(fn: (...args: any[]) => unknown): string {
  return createHash('sha256').update(sourceTokens(fn.toString())).digest('hex').slice(0, 12);
}

export function sourceTokens(source: string): string {
  const code = withoutKeptNames(source)
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/(^|\s)\/\/[^\n]*/g, ' ')
    // an escape in a string and the character itself are one: `\n` or a newline, `\u00e9` or é
    .replace(/\\(?:u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[nrtbfv0])/g, ' ');
  const tokens = code.match(/[A-Za-z_$][\w$]*|\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?|[-+*/%<>=!&|?~^.]+/gi) ?? [];
  const out: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    // an imported name as a bundler or test runner rewrites it — `(0, import_fs.readFile)` (esbuild),
    // `(0,__vite_ssr_import_0__.readFile)` (vitest), `(0, fs_1.readFile)` (tsc to CommonJS) — reads as `readFile`
    if (MODULE_NAMESPACE.test(t) && tokens[i + 1] === '.') {
      if (out.at(-1) === '0') out.pop();
      i += 1;
      continue;
    }
    out.push(/^\d/.test(t) ? String(Number(t.replace(/_/g, ''))) : t);
  }
  return out.join(' ');
}

/**
 * `__name(fn, "compensate")` → `fn`: esbuild's keepNames (tsx uses it) wraps named function
 * expressions so, and the same code built without it has none.
 */
function withoutKeptNames(source: string): string {
  let out = source;
  for (let at = out.indexOf('__name('); at >= 0; at = out.indexOf('__name(', at)) {
    const end = closingParen(out, at + '__name'.length);
    if (end < 0) break;
    const inner = out.slice(at + '__name('.length, end).replace(/,\s*(["'`])[\w$]*\1\s*$/, '');
    out = out.slice(0, at) + inner + out.slice(end + 1);
  }
  return out;
}

/** The index of the `)` closing the `(` at `open`, skipping strings; -1 if there is none. */
function closingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === "'" || c === '`') {
      for (i++; i < text.length && text[i] !== c; i++) if (text[i] === '\\') i++;
    } else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  return -1;
}

const MODULE_NAMESPACE = /^(?:__vite_ssr_import_\d+__|__vi_import_\d+__|import_[\w$]+|[A-Za-z$][\w$]*_\d+)$/;

const VERSION = /^[A-Za-z0-9_.:-]{1,64}$/;

export function checkVersion(version: string): string {
  if (typeof version !== 'string' || !VERSION.test(version))
    throw new ValidationError('version', `must be 1–64 letters, digits, _ . : or - (got ${JSON.stringify(version)})`);
  return version;
}

/** The tag of a run's pass tasks: only a worker with this version of this workflow claims them. */
export function versionTag(workflow: string, version: string): string {
  return `${workflow}@${version}`;
}

/** Where each run's tag was kept before it came from the run's view (`runTag`): rows of older runs, deleted with them. */
export const RUN_TAG = 'run-tag';
/** The workers that run passes, with their tags, each renewed while its process is up. */
export const RUN_WORKERS = 'run-workers';

interface Presence {
  tags: string[];
  expiresAt: number;
  createdAt: number;
}

/**
 * Says which versions this process runs, for `liveTags`: renewed every `everyMs`, expiring after
 * three missed renewals, removed when the worker stops.
 */
export function advertise(
  store: Store,
  workerId: string,
  tags: () => string[],
  everyMs: number,
  onError: (error: unknown) => void,
): () => Promise<void> {
  const put = async () => {
    const now = await store.now();
    const value: Presence = { tags: tags(), expiresAt: now + 3 * everyMs, createdAt: now };
    await store.projectionPut({ name: RUN_WORKERS, key: workerId, value });
    // the rows of workers that died without removing theirs, an hour after they expired
    for (const row of await store.projectionList({ name: RUN_WORKERS, limit: 500 })) {
      if ((row.value as Presence).expiresAt < now - 3_600_000)
        await store.projectionDelete({ name: RUN_WORKERS, key: row.key });
    }
  };
  let renewing: Promise<void> = Promise.resolve();
  // one renewal at a time, and the stop waits for the one under way: none outlives the store
  const renew = () => (renewing = renewing.then(() => put().catch(onError)));
  renew();
  const timer = setInterval(renew, everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await renewing;
    await store.projectionDelete({ name: RUN_WORKERS, key: workerId }).catch(onError);
  };
}

/** The tags some live worker has: a run whose tag is not among them waits for a deploy of its version. */
export async function liveTags(store: Store): Promise<Set<string>> {
  const now = await store.now();
  const live = new Set<string>();
  let after: string | undefined;
  for (;;) {
    const rows = await store.projectionList({
      name: RUN_WORKERS,
      limit: 500,
      ...(after === undefined ? {} : { after }),
    });
    for (const row of rows) {
      const presence = row.value as Presence;
      if (presence.expiresAt > now) for (const tag of presence.tags) live.add(tag);
    }
    if (rows.length < 500) return live;
    after = rows.at(-1)!.key;
  }
}

/**
 * The version a run waits for: its own, when no live worker has it and the run has not ended (its
 * next pass will not run until one does). Null for a run that some worker can run, or that ended.
 */
export function missingVersion(
  run: { workflow: string; version?: string | null; status: string },
  live: Set<string>,
): string | null {
  if (!run.version || ['success', 'partial_success', 'failed', 'cancelled'].includes(run.status)) return null;
  return live.has(versionTag(run.workflow, run.version)) ? null : run.version;
}
