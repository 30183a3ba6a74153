import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { backends } from '../src/testing/backends.js';
import { serve, type Served } from './child.js';

describe('three `runledger serve` processes on PostgreSQL', () => {
  const servers: Served[] = [];
  afterEach(
    () =>
      void servers.splice(0).forEach((s) => {
        s.proc.kill('SIGKILL');
      }),
  );

  it('fire an every-second schedule once per slot, each slot one execution', async () => {
    const database = await backends[1]!.create();
    servers.push(...(await Promise.all([serve(database), serve(database), serve(database)])));
    const [a, b, c] = servers.map((s) => s.url);
    const post = async (url: string, path: string, body: unknown) =>
      (
        await fetch(url + path, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json();
    const wf = await post(a!, '/workflows', {
      name: 'tick',
      steps: [{ id: 'note', type: 'log', config: { message: 'tick' } }],
    });
    const schedule = await post(b!, '/schedules', {
      cron: '*/1 * * * * *',
      target: { workflow: wf.id },
      overlap: 'allow',
    });
    expect(schedule.id).toBeTruthy();
    await sleep(5500);
    expect((await fetch(`${c}/schedules/${schedule.id}`, { method: 'DELETE' })).status).toBe(204);
    await sleep(500);

    const engine = await createEngine({ database, workers: false });
    try {
      const slots = (await engine.journal.readStream(`schedule-slot:${schedule.id}`, { limit: 1000 })).map((e) => ({
        type: e.type,
        ...(e.data as { slot: string; run_id: string }),
      }));
      const seconds = slots.map((s) => Date.parse(s.slot) / 1000);
      expect(slots.every((s) => s.type === 'schedule.fired')).toBe(true);
      expect(new Set(seconds).size).toBe(seconds.length);
      expect(seconds.length).toBeGreaterThanOrEqual(4);
      expect(seconds.at(-1)! - seconds[0]!).toBe(seconds.length - 1);
      const { executions } = await (await fetch(`${a}/workflows/${wf.id}/executions?limit=100`)).json();
      expect(executions.map((e: { execution_id: string }) => e.execution_id).sort()).toEqual(
        slots.map((s) => s.run_id).sort(),
      );
      expect(executions.every((e: { trigger_type: string }) => e.trigger_type === 'schedule')).toBe(true);
    } finally {
      await engine.close();
    }
  }, 60_000);
});
