import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { extname, isAbsolute, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ValidationError } from '../errors.js';
import { envValue } from '../settings.js';

const TYPESCRIPT = new Set(['.ts', '.mts', '.cts', '.tsx']);

let tsxRegistered: Promise<void> | undefined;

/**
 * tsx's loaders, registered once and only for a TypeScript module: they cost ~60 ms at start and
 * change how every later import resolves, which a plain .js module does not need. Both loaders,
 * because a .ts file in a package without `"type": "module"` (what `npm init -y` writes) loads as CommonJS.
 */
function registerTsx(): Promise<void> {
  tsxRegistered ??= (async () => {
    const [esm, cjs] = await Promise.all([import('tsx/esm/api'), import('tsx/cjs/api')]);
    esm.register();
    cjs.register();
  })();
  return tsxRegistered;
}

/** Node's import of a file, through tsx's loaders for a TypeScript one: a second import returns the first's module. */
async function importOnce(file: string): Promise<Record<string, unknown>> {
  if (TYPESCRIPT.has(extname(file))) await registerTsx();
  return import(pathToFileURL(file).href);
}

/**
 * The exported values of the module a user names with `flag` (`--workflows ./flows.ts`), JavaScript or
 * TypeScript, with the exports of a CommonJS module's `module.exports` spread in. A module that cannot
 * be loaded throws one line naming the flag, the file and the line (`--workflows ./flows.ts: SyntaxError
 * at flows.ts:3:7: Unexpected "="`), the original stack appended only when `debug` (RUNLEDGER_LOG_LEVEL=debug).
 * `load` imports the file (`runledger dev` passes one that imports it afresh).
 *
 * @example const values = await loadModule('--workflows', './flows.ts');
 */
export async function loadModule(
  flag: string,
  path: string,
  debug = envValue(process.env, 'RUNLEDGER_LOG_LEVEL') === 'debug',
  load: (file: string) => Promise<Record<string, unknown>> = importOnce,
): Promise<unknown[]> {
  const file = resolve(path);
  if (!existsSync(file)) throw new ValidationError(`${flag} ${path}`, `no such file: ${file}`);
  let module: Record<string, unknown>;
  try {
    module = await load(file);
  } catch (error) {
    const failure = new ValidationError(
      `${flag} ${path}`,
      `${describeFailure(error, file)}${debug && error instanceof Error ? `\n${error.stack}` : ''}`,
    );
    failure.cause = error;
    throw failure;
  }
  // a CommonJS module's exports arrive as `default`; an ES module's default export, spread, adds nothing a caller
  // looks for
  const cjsExports =
    module.default !== null && typeof module.default === 'object' && !Array.isArray(module.default)
      ? Object.values(module.default)
      : [];
  return [...Object.values(module), ...cjsExports];
}

/** `SyntaxError at flows.ts:3:7: Unexpected "="`: the kind of failure, where it is, and what it says, on one line. */
export function describeFailure(error: unknown, file: string): string {
  if (!(error instanceof Error)) return String(error);
  // esbuild (through tsx) reports a TypeScript syntax error as "Transform failed …\n<file>:<line>:<col>: ERROR: <text>"
  const transform = /^(.+?):(\d+):(\d+): ERROR: (.*)$/m.exec(error.message);
  if (transform) return `SyntaxError at ${shortPath(transform[1]!)}:${transform[2]}:${transform[3]}: ${transform[4]}`;
  const message = error.message.split('\n')[0];
  const at = userFrame(error.stack ?? '') ?? (error.name === 'SyntaxError' ? checkSyntax(file) : undefined);
  return `${error.name}${at ? ` at ${at}` : ''}: ${message}`;
}

/** The first stack frame in the user's own code (not node's internals, not a dependency): `flows.ts:3:7`. */
function userFrame(stack: string): string | undefined {
  for (const [, location] of stack.matchAll(/^\s+at (?:.*\()?(.+?:\d+:\d+)\)?$/gm)) {
    const path = pathOf(location!);
    if (isAbsolute(path) && !path.includes('/node_modules/')) return shortPath(path);
  }
  return undefined;
}

/**
 * Node keeps the line of a JavaScript syntax error out of the error it throws from `import()` (it prints
 * it only for an uncaught one), so the file is checked again by `node --check`, which prints it first.
 */
function checkSyntax(file: string): string | undefined {
  try {
    execFileSync(process.execPath, ['--check', file], { stdio: ['ignore', 'ignore', 'pipe'] });
    return undefined;
  } catch (error) {
    const first = String((error as { stderr?: Buffer }).stderr ?? '').split('\n')[0] ?? '';
    const where = /^(.+):(\d+)$/.exec(pathOf(first));
    return where ? `${shortPath(where[1]!)}:${where[2]}` : undefined;
  }
}

/** `file:///a/b.js:3:7` as `/a/b.js:3:7`; a plain path as it is. */
function pathOf(location: string): string {
  const [, url, position] = /^(file:\/\/.+?)((?::\d+)+)$/.exec(location) ?? [];
  return url ? fileURLToPath(url) + position : location;
}

function shortPath(path: string): string {
  const short = relative(process.cwd(), path);
  return short.startsWith('..') ? path : short;
}
