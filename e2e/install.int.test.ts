import { execFile, type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';

// What a user outside this repository gets: the tarball `npm pack` makes, installed into an empty
// project. One pack and one install serve every case: 4-5 min here with a rebuild on a loaded machine, the
// install from a warm npm cache most of the rest.

const repo = resolve('.');
const work = mkdtempSync(join(tmpdir(), 'runledger-install-'));
const app = join(work, 'app');
const children: ChildProcess[] = [];

/** Offline: everything the install needed is in npm's cache by then, and npx must not ask a registry. */
const offline = { npm_config_offline: 'true', npm_config_update_notifier: 'false', RUNLEDGER_LOG_LEVEL: 'warn' };

/** `command …args` in `cwd` to its end; its stdout, or an error with all it printed. */
function ok(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 60_000,
): Promise<string> {
  return new Promise((done, fail) => {
    execFile(
      command,
      args,
      { cwd, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 16 << 20, env: { ...process.env, ...env } },
      (error, stdout, stderr) =>
        error
          ? fail(new Error(`${command} ${args.join(' ')} exited ${error.code}:\n${stdout}${stderr}`))
          : done(stdout),
    );
  });
}

/** `npx runledger …args` in the project, as a long-running process (in its own group, so npm and node stop together). */
function npxRunledger(args: string[], env: NodeJS.ProcessEnv = {}): { proc: ChildProcess; output(): string } {
  const proc = spawn('npx', ['runledger', ...args], {
    cwd: app,
    detached: true,
    env: { ...process.env, ...offline, RUNLEDGER_DATA_DIR: mkdtempSync(join(work, 'data-')), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(proc);
  let output = '';
  proc.stdout!.on('data', (chunk) => (output += chunk));
  proc.stderr!.on('data', (chunk) => (output += chunk));
  return { proc, output: () => output };
}

beforeAll(async () => {
  const pack = JSON.parse(await ok('npm', ['pack', '--json', '--pack-destination', work], repo, {}, 240_000)) as {
    filename: string;
    files: { path: string }[];
  }[];
  const tarball = join(work, pack[0]!.filename);
  const packed = pack[0]!.files.map((f) => f.path);
  expect(packed).toContain('dist/ui/index.html');
  expect(packed.filter((path) => /\.map$|\.test\.|conformance/.test(path))).toEqual([]);
  mkdirSync(app);
  await ok('npm', ['init', '-y'], app);
  await ok('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'], app, {}, 240_000);
}, 420_000);

afterAll(() => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
});

describe('the packed tarball installed into an empty project', () => {
  it('npx runledger --help answers from the project, offline', async () => {
    expect(await ok('npx', ['runledger', '--help'], app, offline)).toMatch(/Usage: runledger/);
  });

  it('imports at run time only its dependencies and node built-ins (no devDependency)', () => {
    const installed = join(app, 'node_modules', 'runledger');
    const { dependencies } = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const files = (readdirSync(join(installed, 'dist'), { recursive: true }) as string[]).filter((f) =>
      f.endsWith('.js'),
    );
    const imported = new Set(
      files.flatMap((f) =>
        [
          ...readFileSync(join(installed, 'dist', f), 'utf8').matchAll(
            /(?:^import\s+|\bfrom\s+|\bimport\()['"]([@a-z][\w.@/-]*)['"]/gm,
          ),
        ].map((m) => m[1]!),
      ),
    );
    const outside = [...imported].filter(
      (spec) =>
        !spec.startsWith('node:') &&
        !(
          spec
            .split('/')
            .slice(0, spec.startsWith('@') ? 2 : 1)
            .join('/') in dependencies
        ) &&
        !spec.startsWith('runledger/'),
    );
    expect(files.length).toBeGreaterThan(100);
    expect(outside).toEqual([]);
  });

  it('imports runledger, runledger/client and runledger/testing with their types, and runs a workflow from code (app.mts through the installed tsx)', async () => {
    writeFileSync(
      join(app, 'app.mts'),
      `import { createEngine, workflow } from 'runledger';
import { Client } from 'runledger/client';
import { createSqlitePath } from 'runledger/testing';

const double = workflow('double', async (ctx, input: { n: number }) => ctx.step('double', async () => input.n * 2));
const engine = await createEngine({ database: process.argv[2] ?? createSqlitePath(), workflows: [double] });
const result: number = await (await engine.start(double, { n: 21 })).result({ pollMs: 50 });
await engine.close();
console.log(JSON.stringify({ result, client: typeof new Client({ url: 'http://127.0.0.1:1' }).run }));
`,
    );
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          strict: true,
          noEmit: true,
          typeRoots: [join(repo, 'node_modules/@types')],
          types: ['node'],
        },
        files: ['app.mts'],
      }),
    );
    await ok(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], app);
    for (const backend of backends) {
      const output = await ok(process.execPath, ['--import', 'tsx', 'app.mts', await backend.create()], app, offline);
      expect(JSON.parse(output.trim().split('\n').pop()!), `${backend.name}: ${output}`).toEqual({
        result: 42,
        client: 'function',
      });
    }
  }, 120_000);

  describe.each(backends)('flows.ts with the CLI on $name', (backend) => {
    it('serve --workflows ./flows.ts, worker --workflows ./flows.ts, start greet: the run succeeds and the dashboard is served', async () => {
      writeFileSync(
        join(app, 'flows.ts'),
        `import { workflow } from 'runledger';

interface Greeting { name: string }

export const greet = workflow('greet', async (ctx, input: Greeting) => {
  const name = await ctx.step('upper', async () => input.name.toUpperCase());
  return { greeting: \`Hello \${name}\` };
});
`,
      );
      const database =
        backend.name === 'sqlite' ? join(mkdtempSync(join(work, 'db-')), 'runledger.db') : await backend.create();
      const server = npxRunledger([
        'serve',
        '--port',
        '0',
        '--no-workers',
        '--workflows',
        './flows.ts',
        '--database',
        database,
      ]);
      const url = await eventually(() => /serving (http:\/\/\S+)/.exec(server.output())?.[1], 30_000).catch(() => {
        throw new Error(`serve did not start:\n${server.output()}`);
      });
      const worker = npxRunledger(['worker', '--workflows', './flows.ts', '--database', database]);
      await eventually(() => /worker \d+: .*greet on /.test(worker.output()), 30_000).catch(() => {
        throw new Error(`worker did not start:\n${worker.output()}`);
      });
      const dashboard = await fetch(`${url}/ui`);
      expect(dashboard.status).toBe(200);
      const page = await dashboard.text();
      const asset = /src="([^"]+\.js)"/.exec(page)?.[1];
      expect(asset, page).toBeDefined();
      expect((await fetch(new URL(asset!, url))).status).toBe(200);
      const answer = join(work, `out-${backend.name}.json`);
      await ok(
        'npx',
        ['runledger', 'start', 'greet', '--input', '{"name":"ada"}', '--wait', '--output', answer, '--url', url],
        app,
        offline,
      );
      expect(JSON.parse(readFileSync(answer, 'utf8'))).toEqual({ greeting: 'Hello ADA' });
      for (const p of [server.proc, worker.proc]) process.kill(-p.pid!, 'SIGTERM');
      await eventually(() => /stopped/.test(worker.output()) && /stopped/.test(server.output()), 20_000);
    }, 120_000);
  });
});
