import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';

describe('three `runledger serve` processes on PostgreSQL', () => {
  const procs: ChildProcess[] = [];
  afterEach(() => void procs.splice(0).forEach((p) => p.kill('SIGKILL')));

  it('fire an every-second schedule once per slot, each slot one execution', async () => {
    const database = await backends[1]!.create();
    const serve = async () => {
      const proc = spawn(process.execPath, ['bin/runledger.js', 'serve', '--port', '0', '--database-url', database], { env: { ...process.env, RUNLEDGER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rl-sched-')) }, stdio: ['ignore', 'pipe', 'pipe'] });
      procs.push(proc);
      let output = '';
      proc.stdout!.on('data', (chunk) => (output += chunk));
      proc.stderr!.on('data', (chunk) => (output += chunk));
      return eventually(() => /serving (http:\/\/\S+)/.exec(output)?.[1], 20_000);
    };
    const [a, b, c] = await Promise.all([serve(), serve(), serve()]);
    const post = async (url: string, path: string, body: unknown) => (await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();
    const wf = await post(a!, '/workflows', { name: 'tick', steps: [] });
    const schedule = await post(b!, '/schedules', { cron: '*/1 * * * * *', target: { workflow: wf.id }, overlap: 'allow' });
    expect(schedule.id).toBeTruthy();
    await sleep(5500);
    expect((await fetch(`${c}/schedules/${schedule.id}`, { method: 'DELETE' })).status).toBe(204);
    await sleep(500);

    const engine = await createEngine({ database, workers: false });
    try {
      const slots = (await engine.journal.readStream(`schedule-slot:${schedule.id}`, { limit: 1000 })).map((e) => ({ type: e.type, ...(e.data as { slot: string; run_id: string }) }));
      const seconds = slots.map((s) => Date.parse(s.slot) / 1000);
      expect(slots.every((s) => s.type === 'schedule.fired')).toBe(true);
      expect(new Set(seconds).size).toBe(seconds.length);
      expect(seconds.length).toBeGreaterThanOrEqual(4);
      expect(seconds.at(-1)! - seconds[0]!).toBe(seconds.length - 1);
      const { executions } = await (await fetch(`${a}/workflows/${wf.id}/executions?limit=100`)).json();
      expect(executions.map((e: { execution_id: string }) => e.execution_id).sort()).toEqual(slots.map((s) => s.run_id).sort());
      expect(executions.every((e: { trigger_type: string }) => e.trigger_type === 'schedule')).toBe(true);
    } finally {
      await engine.close();
    }
  }, 60_000);
});
