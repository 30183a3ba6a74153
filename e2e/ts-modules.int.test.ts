import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import type { Workflow } from '../src/runtime/workflow.js';
import { createSqlitePath } from '../src/testing/databases.js';

const bin = resolve('bin/runledger.js');

/** A temp folder holding `files`, as a user's project without a package.json (so .ts loads as CommonJS). */
function project(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'runledger-ts-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** `runledger …args` run in `cwd` to its end. */
function runIn(
  cwd: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd, encoding: 'utf8', env: { ...process.env, RUNLEDGER_LOG_LEVEL: '', ...env } },
      (error, stdout, stderr) => done({ code: error ? (error.code as number) : 0, output: stdout + stderr }),
    );
  });
}

describe('TypeScript modules for --workflows and --agents', () => {
  it('runledger worker --workflows ./flows.ts runs the workflow the .ts module exports', async () => {
    const dir = project({
      'flows.ts': `import { workflow } from '${resolve('dist/index.js')}';
interface Order { n: number }
export const double = workflow('double', async (ctx, input: Order): Promise<number> => ctx.step('double', async () => input.n * 2));
`,
    });
    const database = createSqlitePath();
    // the run is started from this process with the same module, so both sides agree on its version
    const { double } = (await import(join(dir, 'flows.ts'))) as { double: Workflow<{ n: number }, number> };
    const engine = await createEngine({ database, workflows: [double], workers: false });
    const proc = spawn(process.execPath, [bin, 'worker', '--workflows', './flows.ts', '--database', database], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    proc.stdout.on('data', (chunk) => (output += chunk));
    proc.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((done) => proc.on('exit', (code) => done(code)));
    try {
      const run = await engine.start(double, { n: 21 }, { id: 'ts-1' });
      const early = exited.then((code) =>
        Promise.reject(new Error(`the worker exited (${code}) before the run ended:\n${output}`)),
      );
      expect(await Promise.race([run.result({ pollMs: 50 }), early])).toBe(42);
      expect(output).toMatch(/worker \d+: .*, double on /);
    } finally {
      proc.kill('SIGTERM');
      expect(await exited, output).toBe(0);
      await engine.close();
    }
  });

  it('a .ts module with a syntax error is one line naming the flag, the file and its line, and exit code 1', async () => {
    const dir = project({ 'broken.ts': 'const a = 1;\nexport const y: number = a;\nconst z: = 3;\n' });
    const { code, output } = await runIn(dir, [
      'worker',
      '--workflows',
      './broken.ts',
      '--database',
      join(dir, 'x.db'),
    ]);
    expect(code).toBe(1);
    expect(output).toBe('--workflows ./broken.ts: SyntaxError at broken.ts:3:9: Unexpected "="\n');
  });

  it('a module that throws when imported names the line that threw; the stack only at RUNLEDGER_LOG_LEVEL=debug', async () => {
    const dir = project({
      'agents.mts': "type T = { a: number };\nconst t: T = { a: 1 };\nthrow new Error('no API key ' + t.a);\n",
    });
    const plain = await runIn(dir, [
      'serve',
      '--port',
      '0',
      '--agents',
      './agents.mts',
      '--database',
      join(dir, 'x.db'),
    ]);
    expect(plain.code).toBe(1);
    expect(plain.output).toBe('--agents ./agents.mts: Error at agents.mts:3:7: no API key 1\n');
    const debug = await runIn(
      dir,
      ['serve', '--port', '0', '--agents', './agents.mts', '--database', join(dir, 'x.db')],
      { RUNLEDGER_LOG_LEVEL: 'debug' },
    );
    expect(debug.code).toBe(1);
    expect(debug.output).toMatch(
      /^--agents \.\/agents\.mts: Error at agents\.mts:3:7: no API key 1\nError: no API key 1\n\s+at /,
    );
  });

  it('a JavaScript syntax error and a missing file are one line each too', async () => {
    const dir = project({ 'flows.mjs': 'export const a = 1;\nconst z = ;\n' });
    const broken = await runIn(dir, ['worker', '--workflows', './flows.mjs', '--database', join(dir, 'x.db')]);
    expect(broken).toEqual({
      code: 1,
      output: "--workflows ./flows.mjs: SyntaxError at flows.mjs:2: Unexpected token ';'\n",
    });
    const missing = await runIn(dir, ['worker', '--workflows', './flow.ts', '--database', join(dir, 'x.db')]);
    expect(missing).toEqual({ code: 1, output: `--workflows ./flow.ts: no such file: ${join(dir, 'flow.ts')}\n` });
  });
});
