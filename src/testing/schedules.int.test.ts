import { afterEach, describe, expect, it } from 'vitest';
import { workflow } from '../runtime/workflow.js';
import { createTestEngine, type TestEngine } from './test-engine.js';

// The kit is SQLite by design (its clock is the store's): these tests run on it alone. The scheduler's firing on
// both backends is src/triggers/schedules.int.test.ts.

const MINUTE = 60_000;
const START = Date.parse('2030-01-01T00:00:00Z');

/** A run per slot: the slot it was started for, and the test clock when its step ran. */
const tick = workflow('tick', async (ctx, input: { slot: string }) => ({
  slot: input.slot,
  ranAt: await ctx.step('record', async () => t!.now()),
}));

/** Every run a schedule started, oldest slot first, as it ended. */
async function runsOf(id: string) {
  const fired = await t!.engine.journal.readStream(`schedule-slot:${id}`, { limit: 10_000 });
  return Promise.all(
    fired
      .filter((e) => e.type === 'schedule.fired')
      .map(async (e) => {
        const view = await t!.run((e.data as { run_id: string }).run_id);
        return { status: view.status, output: view.output };
      }),
  );
}

const iso = (ms: number) => new Date(ms).toISOString();

let t: TestEngine | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

describe('createTestEngine: schedules fire as the clock moves', () => {
  it('fires a schedule every 5 minutes 12 times in advance(1h), each slot once, each run at its slot', async () => {
    t = await createTestEngine({ workflows: [tick], now: START });
    const schedule = await t.schedules.create({ cron: '*/5 * * * *', target: { workflow: 'tick' } });
    await t.advance('1h');
    const slots = Array.from({ length: 12 }, (_, i) => START + (i + 1) * 5 * MINUTE);
    expect(await runsOf(schedule.id)).toEqual(
      slots.map((slot) => ({ status: 'success', output: { slot: iso(slot), ranAt: slot } })),
    );
    const { state, next } = await t.schedules.get(schedule.id);
    expect([state.fired, state.skipped, state.failed, state.last_slot]).toEqual([12, 0, 0, iso(START + 60 * MINUTE)]);
    // its next slots are the test clock's too
    expect(next).toEqual([65, 70, 75].map((m) => iso(START + m * MINUTE)));
    expect(t.now()).toBe(START + 60 * MINUTE);
  });

  it('fires nothing of a paused schedule; resumed, the slots after the resume', async () => {
    t = await createTestEngine({ workflows: [tick], now: START });
    const schedule = await t.schedules.create({ cron: '*/5 * * * *', target: { workflow: 'tick' } });
    await t.schedules.setPaused(schedule.id, true);
    await t.advance('1h');
    expect(await runsOf(schedule.id)).toEqual([]);
    expect((await t.schedules.get(schedule.id)).state.fired).toBe(0);
    await t.schedules.setPaused(schedule.id, false);
    await t.advance('12m');
    expect((await runsOf(schedule.id)).map((r) => r.output)).toEqual([
      { slot: iso(START + 65 * MINUTE), ranAt: START + 65 * MINUTE },
      { slot: iso(START + 70 * MINUTE), ranAt: START + 70 * MINUTE },
    ]);
  });

  it('fires the slots of two schedules in time order, and a schedule a run creates', async () => {
    const starts = workflow('starts', async (ctx) => {
      await ctx.step('schedule', async () => {
        await t!.schedules.create({ name: 'made-by-a-run', cron: '30 * * * *', target: { workflow: 'tick' } });
      });
    });
    t = await createTestEngine({ workflows: [tick, starts], now: START });
    const order: string[] = [];
    t.engine.on('run:start', ({ workflow: name }) => void order.push(`${name}@${iso(t!.now()).slice(11, 16)}`));
    await t.schedules.create({ cron: '20 * * * *', target: { workflow: 'starts' } });
    await t.schedules.create({ cron: '*/15 * * * *', target: { workflow: 'tick' } });
    await t.advance('1h');
    expect(order).toEqual(['tick@00:15', 'starts@00:20', 'tick@00:30', 'tick@00:30', 'tick@00:45', 'tick@01:00']);
  });
});
