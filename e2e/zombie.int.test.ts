import { describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/engine.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { slow } from './zombie-workflow.js';

function worker(database: string, log: string): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'e2e/zombie-child.ts', database, log], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

describe.each(backends)('a worker stopped past its lease on $name', (backend) => {
  it('cannot write the step result once another worker holds the run', async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-zombie-')), 'log');
    writeFileSync(log, '');
    const engine = await createEngine({ database, workflows: [slow(log)], workers: false });
    const children: ChildProcess[] = [];
    try {
      await engine.start(slow(log), {}, { id: 'z-1' });
      const zombie = worker(database, log);
      children.push(zombie);
      await eventually(async () => (await engine.run('z-1')).steps[0]?.status === 'running', 15_000);
      zombie.kill('SIGSTOP');
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const rescuer = worker(database, log);
      children.push(rescuer);
      await eventually(async () => (await engine.run('z-1')).steps[0]?.attempts === 2, 15_000);
      zombie.kill('SIGCONT');
      const output = await engine.runtime.handle('z-1').result({ pollMs: 100 });
      expect(output).toBe(rescuer.pid);
      await eventually(() => readFileSync(log, 'utf8').includes(`${zombie.pid} finished work`), 10_000);

      const events = await engine.journal.readStream('run:z-1');
      const completed = events.filter((e) => e.type === 'step.completed');
      expect(completed).toHaveLength(1);
      expect(completed[0]?.data).toMatchObject({ attempt: 2, output: rescuer.pid });
      expect(events.at(-1)?.type).toBe('run.completed');
    } finally {
      for (const child of children) child.kill('SIGKILL');
      await engine.close();
    }
  }, 60_000);
});
