import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../src/engine.js';
import { workflow } from '../src/runtime/workflow.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { triggers } from '../src/triggers/service.js';
import { createRunStarter } from '../src/triggers/starter.js';
import { storedWorkflows } from '../src/app/workflows.js';

interface Child {
  proc: ChildProcess;
  output: () => string;
  exited: Promise<unknown>;
}

/** `e2e/schedule-child.ts` as a real process; resolves once its scheduler runs. */
async function child(database: string, reloadMs: number): Promise<Child> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'e2e/schedule-child.ts', database, String(reloadMs)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout!.on('data', (chunk) => (output += chunk));
  proc.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise((done) => proc.on('exit', done));
  await eventually(() => output.includes('ready'), 30_000).catch(() => {
    throw new Error(`scheduler process did not start:\n${output}`);
  });
  return { proc, output: () => output, exited };
}

// the same name as the children's: the parent only creates the schedule (its starter checks the name)
const tick = workflow('tick', async (_ctx, input: unknown) => input);

describe.each(backends)('three scheduler processes on $name', (backend) => {
  const children: Child[] = [];
  let engine: Engine | null = null;
  afterEach(async () => {
    for (const c of children.splice(0)) c.proc.kill('SIGKILL');
    await engine?.close();
    engine = null;
  });

  it('fire an every-second schedule once per slot: no slot doubled, none missed', async () => {
    const database = await backend.create();
    // SQLite has no wake-up across processes: the children find the new schedule by their reload poll
    const reloadMs = backend.name === 'sqlite' ? 300 : 30_000;
    children.push(...(await Promise.all([1, 2, 3].map(() => child(database, reloadMs)))));
    engine = await createEngine({ database, workflows: [tick], workers: false });
    const service = triggers(engine, engine.store, {
      starter: createRunStarter({
        engine,
        store: engine.store,
        workflows: storedWorkflows(engine, { secretKey: randomBytes(32) }),
      }),
      schedulerEnabled: false,
      routingEnabled: false,
    });
    const created = await service.schedules.create({
      cron: '*/1 * * * * *',
      target: { workflow: 'tick' },
      overlap: 'allow',
    });
    await sleep(5500);
    await Promise.all(children.map(async (c) => (c.proc.kill('SIGTERM'), await c.exited)));
    const outputs = children.map((c) => c.output());
    for (const out of outputs) expect(out, out).toContain('stopped');
    expect(outputs.join('')).not.toContain('error');

    const fired = (await engine.journal.readStream(`schedule-slot:${created.id}`, { limit: 1000 })).map((e) => ({
      type: e.type,
      ...(e.data as { slot: string; run_id: string }),
    }));
    const seconds = fired.map((f) => Date.parse(f.slot) / 1000);
    expect(fired.every((f) => f.type === 'schedule.fired')).toBe(true);
    expect(new Set(seconds).size).toBe(seconds.length);
    expect(seconds.length).toBeGreaterThanOrEqual(4);
    expect(seconds.at(-1)! - seconds[0]!).toBe(seconds.length - 1);
    const runs = await engine.journal.readAll({ streamPrefix: 'run:', types: ['run.started'], limit: 1000 });
    expect(runs.map((r) => r.streamId).sort()).toEqual(fired.map((f) => `run:${f.run_id}`).sort());
    for (const f of fired) expect((await engine.run(f.run_id)).status).not.toBe('failed');

    // every slot was reached by several processes, and exactly one of them recorded it
    const reports = outputs.flatMap((out) =>
      [...out.matchAll(/^slot (\S+) (\S+) (\w+)$/gm)].map((m) => ({ slot: m[2]!, outcome: m[3]! })),
    );
    for (const f of fired) {
      const forSlot = reports.filter((r) => r.slot === f.slot);
      expect(
        forSlot.filter((r) => r.outcome === 'fired'),
        f.slot,
      ).toHaveLength(1);
      expect(forSlot.every((r) => r.outcome === 'fired' || r.outcome === 'taken')).toBe(true);
    }
    const contended = fired.filter((f) => reports.filter((r) => r.slot === f.slot).length >= 2).length;
    expect(contended).toBeGreaterThanOrEqual(fired.length - 1);
    console.log(
      `${backend.name}: ${fired.length} slots, ${reports.length} slot reports from 3 processes, ${contended} slots reached by ≥ 2 of them`,
    );
  }, 60_000);
});
