import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createEngine } from '../src/engine.js';
import type { Workflow } from '../src/runtime/workflow.js';
import { createSqlitePath } from '../src/testing/databases.js';

describe('runledger worker', () => {
  it('runs the workflows of a module and stops gracefully on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runledger-cli-'));
    const module = join(dir, 'workflows.mjs');
    writeFileSync(
      module,
      `import { workflow } from '${resolve('dist/index.js')}';
export const double = workflow('double', async (ctx, input) => ctx.step('double', async () => input.n * 2));`,
    );
    const { double } = (await import(module)) as { double: Workflow };
    const database = createSqlitePath();
    const engine = await createEngine({ database, workflows: [double], workers: false });
    try {
      const run = await engine.start(double, { n: 21 }, { id: 'cli-1' });
      const proc = spawn(
        process.execPath,
        ['bin/runledger.js', 'worker', '--workflows', module, '--database', database],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let output = '';
      proc.stdout.on('data', (chunk) => (output += chunk));
      proc.stderr.on('data', (chunk) => (output += chunk));
      const exited = new Promise<number | null>((done) => proc.on('exit', (code) => done(code)));
      expect(await run.result({ pollMs: 50 })).toBe(42);
      proc.kill('SIGTERM');
      expect(await exited, output).toBe(0);
      expect(output).toMatch(/worker \d+: stored workflows, sessions, chat replies, triggers, double on /);
      expect(output).toMatch(/stopped/);
    } finally {
      await engine.close();
    }
  });
});
