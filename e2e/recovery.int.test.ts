import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Channels } from '../src/chat/channels.js';
import { REPLY_SUBSCRIPTION } from '../src/chat/reply.js';
import { createEngine } from '../src/engine.js';
import type { Workflow } from '../src/runtime/workflow.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { cli, type Cli } from './child.js';

/**
 * Recovery after a worker process dies mid-run: its leases (30 s by default) must not make the
 * work wait for them. Real `runledger worker` processes: the first holds three runs' steps and the
 * AI-reply subscription; it is killed with -9 (a restarted process on the same machine knows the
 * pid is gone and ends its leases at start) or stopped with SIGSTOP (as a process on another
 * machine would look: only its heartbeat stops); a second one takes over. Prints the measured times.
 */
describe.each(backends)('recovery of a dead worker process on $name', (backend) => {
  /**
   * SQLite's write lock is a lock on the file: a process paused inside a write transaction holds
   * every writer of the file until it runs again or dies, whatever the engine does. Stops `w` at
   * a moment it holds no write lock (a write of the test's own goes through at once), as the
   * process on another machine that SIGSTOP stands for would look.
   */
  async function stopOutsideWrite(w: Cli, path: string): Promise<void> {
    const probe = new Database(path, { timeout: 0 });
    try {
      for (;;) {
        w.proc.kill('SIGSTOP');
        try {
          probe.exec('BEGIN IMMEDIATE; ROLLBACK');
          return;
        } catch {
          w.proc.kill('SIGCONT');
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
    } finally {
      probe.close();
    }
  }

  const RUNS = 3;

  function setup() {
    const dir = mkdtempSync(join(tmpdir(), 'runledger-recovery-'));
    const log = join(dir, 'log');
    writeFileSync(log, '');
    const module = join(dir, 'workflows.mjs');
    // each attempt logs its process and time; in a process told to hold, the step never ends
    writeFileSync(
      module,
      `import { appendFileSync } from 'node:fs';
import { workflow } from '${resolve('dist/index.js')}';
export const hold = workflow('hold', async (ctx, input) => ctx.step('work', async () => {
  appendFileSync(${JSON.stringify(log)}, process.pid + ' ' + input.n + ' ' + Date.now() + '\\n');
  if (process.env.RECOVERY_HOLD === '1') await new Promise((resolve) => setTimeout(resolve, 600_000));
  return process.pid;
}));`,
    );
    const starts = () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(' ').map(Number) as [number, number, number]);
    return { module, starts };
  }

  const worker = (module: string, database: string, hold: boolean): Cli =>
    cli(['worker', '--workflows', module, '--database', database], {
      RECOVERY_HOLD: hold ? '1' : '0',
      RUNLEDGER_DATA_DIR: dirname(module),
    });
  const ready = (w: Cli) => eventually(() => /worker \d+: stored workflows/.test(w.output()), 20_000);

  it.each(['SIGKILL', 'SIGSTOP'] as const)(
    'resumes its runs and its AI-reply subscription within seconds after %s',
    async (signal) => {
      const database = await backend.create();
      const { module, starts } = setup();
      const { hold } = (await import(module)) as { hold: Workflow<{ n: number }, number> };
      const engine = await createEngine({ database, workflows: [hold], workers: false });
      const channels = new Channels(engine.store, engine.journal);
      const workers: Cli[] = [];
      try {
        const first = worker(module, database, true);
        workers.push(first);
        await ready(first);
        for (let n = 0; n < RUNS; n++) await engine.start(hold, { n }, { id: `rec-${n}` });
        await eventually(() => starts().length === RUNS, 20_000);
        await eventually(async () => (await engine.store.subscriptionGet({ name: REPLY_SUBSCRIPTION })).owner !== null);

        if (signal === 'SIGSTOP' && backend.name === 'sqlite') await stopOutsideWrite(first, database);
        else first.proc.kill(signal);
        const stoppedAt = Date.now();
        const second = worker(module, database, false);
        workers.push(second);
        await ready(second);
        const readyAt = Date.now();
        await channels.post('general', { sender_id: 'u1', role: 'user', content: 'still there?' });
        const [replied] = await Promise.all([
          eventually(
            async () =>
              (await channels.history('general', { after: 0 })).messages.some((m) => m.role === 'ai') && Date.now(),
            30_000,
          ),
          Promise.all(
            Array.from({ length: RUNS }, (_, n) => engine.runtime.handle(`rec-${n}`).result({ pollMs: 100 })),
          ),
        ]);
        const resumed = Math.max(
          ...starts()
            .filter(([pid]) => pid === second.proc.pid)
            .map(([, , at]) => at),
        );
        const run = (await engine.run('rec-0')).steps[0]!;
        expect(run.attempts).toBe(2);
        expect(await engine.runtime.handle('rec-0').result()).toBe(second.proc.pid);
        const seconds = (ms: number) => (ms / 1000).toFixed(1);
        console.log(
          `[recovery ${backend.name} ${signal}] runs resumed ${seconds(resumed - stoppedAt)} s after the ${signal} ` +
            `(${seconds(resumed - readyAt)} s after the new worker was up, which took ${seconds(readyAt - stoppedAt)} s); ` +
            `AI reply ${seconds(replied - readyAt)} s after the new worker was up`,
        );
        // loose bounds: the lease is 30 s; the target is ≤ 5 s (a loaded machine may take longer)
        expect(resumed - readyAt).toBeLessThan(15_000);
        expect(replied - readyAt).toBeLessThan(15_000);
      } finally {
        for (const w of workers) w.proc.kill('SIGKILL');
        await engine.close();
      }
    },
    120_000,
  );
});
