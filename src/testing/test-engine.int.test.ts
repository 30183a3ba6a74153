import { afterEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { workflow } from '../runtime/workflow.js';
import { createTestEngine, type TestEngine } from './test-engine.js';

// The kit is SQLite by design (its clock is the store's): these tests run on it alone.

const DAY = 86_400_000;
const START = Date.parse('2030-01-01T00:00:00Z');

const trial = workflow('trial', async (ctx, input: { user: string }) => {
  await ctx.step('welcome', async () => `hello ${input.user}`);
  await ctx.sleep('trial-half', '14d');
  await ctx.step('remind', async () => 'reminded');
  await ctx.sleep('trial-end', '16d');
  return { converted: false };
});

/** A step a day for a month: each records the time it ran at. */
const daily = workflow('daily', async (ctx) => {
  const times: number[] = [];
  for (let day = 1; day <= 30; day++) {
    await ctx.sleep(`night-${day}`, '1d');
    times.push(await ctx.step(`day-${day}`, async () => t!.now()));
  }
  return times;
});

const approval = workflow('approval', async (ctx) => {
  const answer = await ctx.waitForEvent<{ ok: boolean }>('approved', { timeout: '7d' });
  return answer === null ? 'timed out' : 'approved';
});

let t: TestEngine | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

describe('createTestEngine: a clock the test moves', () => {
  it('runs a 30-day trial in two advances: the reminder after 14 days, the result after 16 more', async () => {
    t = await createTestEngine({ workflows: [trial], now: START });
    const run = await t.start(trial, { user: 'ada' });
    await t.advance('13d');
    expect((await t.run(run.id)).steps.map((s) => s.name)).toEqual(['welcome']);
    await t.advance('1d');
    expect((await t.run(run.id)).steps.map((s) => s.name)).toEqual(['welcome', 'remind']);
    expect((await t.run(run.id)).status).toBe('sleeping');
    await t.advance('16d');
    expect(await run.result()).toEqual({ converted: false });
    expect(t.now()).toBe(START + 30 * DAY);
  });

  it('runs a month of daily sleeps in one advance, each step at its own day', async () => {
    t = await createTestEngine({ workflows: [daily], now: START });
    const run = await t.start(daily, {});
    await t.advance('30d');
    expect(await run.result()).toEqual(Array.from({ length: 30 }, (_, i) => START + (i + 1) * DAY));
  });

  it('times a 7-day waitForEvent out on advance(7d), not before', async () => {
    t = await createTestEngine({ workflows: [approval] });
    const run = await t.start(approval, {});
    await t.advance('7d');
    expect(await run.result()).toBe('timed out');
    const signalled = await t.start(approval, {});
    await t.advance('6d');
    await t.signal(signalled.id, 'approved', { ok: true });
    await t.idle();
    expect(await signalled.result()).toBe('approved');
  });

  it('runs a task enqueued for tomorrow after advance(1d), at its time', async () => {
    t = await createTestEngine({ now: START });
    const ran: number[] = [];
    t.work('email', async () => void ran.push(t!.now()));
    await t.engine.queue.enqueue('email', { to: 'ada@example.com' }, { runAt: START + DAY });
    await t.advance('23h');
    expect(ran).toEqual([]);
    await t.advance('1h');
    expect(ran).toEqual([START + DAY]);
  });

  it('retries a failed step after its backoff (1 h ± 20 % jitter), on the test clock', async () => {
    const flaky = workflow('flaky', async (ctx) =>
      ctx.step(
        'call',
        async ({ attempt }) => {
          if (attempt === 1) throw new Error('down');
          return attempt;
        },
        { retry: { maxAttempts: 2, backoff: { base: '1h', factor: 1, max: '1h' } } },
      ),
    );
    t = await createTestEngine({ workflows: [flaky] });
    const run = await t.start(flaky, {});
    await t.advance('47m');
    expect((await t.run(run.id)).steps[0]).toMatchObject({ status: 'retrying', attempts: 1 });
    await t.advance('25m');
    expect(await run.result()).toBe(2);
  });

  it('fails a run at its deadline, on the test clock: a 2-day timeout ends a 3-day sleep', async () => {
    const long = workflow('long', async (ctx) => {
      await ctx.sleep('long', '3d');
      return 'woke';
    });
    t = await createTestEngine({ workflows: [long] });
    const run = await t.start(long, {}, { timeout: '2d' });
    await t.advance('47h');
    expect((await t.run(run.id)).status).toBe('sleeping');
    await t.advance('1h');
    expect((await t.run(run.id)).status).toBe('failed');
    await expect(run.result()).rejects.toThrow('TimeoutError');
  });

  it('waits for a running step before it moves the clock: its lease does not run out', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => (started = resolve));
    const slow = workflow('slow', async (ctx) => {
      const at = await ctx.step('work', async () => {
        started();
        await gate;
        return t!.now();
      });
      await ctx.sleep('rest', '1d');
      return at;
    });
    // a lease of 1 s, swept every 200 ms: a clock moved a day under the step would end it
    t = await createTestEngine({ workflows: [slow], now: START, leaseMs: 1000, pollMs: 200 });
    const run = await t.start(slow, {});
    await running;
    let advanced = false;
    const advance = t.advance('1d').then(() => (advanced = true));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(advanced).toBe(false);
    expect(t.now()).toBe(START);
    release();
    await advance;
    expect(await run.result()).toBe(START);
    const [step] = (await t.run(run.id)).steps;
    expect(step).toMatchObject({ name: 'work', attempts: 1, status: 'success' });
  });
});

describe('idle: nothing running and nothing due on the queues the engine works', () => {
  it('answers when the next task comes due, or null when none is scheduled', async () => {
    t = await createTestEngine({ now: START });
    t.work('email', async () => {});
    expect(await t.idle()).toBeNull();
    await t.engine.queue.enqueue('email', {}, { runAt: START + DAY });
    await t.engine.queue.enqueue('email', {}, { runAt: START + 2 * DAY });
    expect(await t.idle()).toBe(START + DAY);
  });

  it("leaves out a paused queue's tasks and a queue nobody here works", async () => {
    t = await createTestEngine({ now: START });
    t.work('email', async () => {});
    await t.engine.operator.pause('queue', 'email', { by: 'test', reason: 'held' });
    const { task: held } = await t.engine.queue.enqueue('email', {});
    await t.engine.queue.enqueue('elsewhere', {});
    expect(await t.idle()).toBeNull();
    await t.advance('1d');
    expect((await t.engine.queue.get(held.id)).state).toBe('ready');
    await t.engine.operator.resume('queue', 'email', { by: 'test', reason: 'go' });
    await t.idle();
    expect((await t.engine.queue.get(held.id)).state).toBe('completed');
  });

  it('names what keeps the engine busy when a step waits for the test', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const stuck = workflow('stuck', async (ctx) => ctx.step('waits', () => gate));
    t = await createTestEngine({ workflows: [stuck], idleTimeoutMs: 300 });
    const run = await t.start(stuck, {});
    await expect(t.advance('1d')).rejects.toThrow(
      /not idle after 300 ms: 1 task\(s\) running on queue 'runledger.runs'/,
    );
    release();
    await t.idle();
    expect((await t.run(run.id)).status).toBe('success');
  });

  it('refuses a start time, an idle timeout or a duration that is not one, and a second advance under way', async () => {
    await expect(createTestEngine({ now: new Date('someday') })).rejects.toThrow(/now: must be a valid date/);
    await expect(createTestEngine({ idleTimeoutMs: 0 })).rejects.toThrow(/idleTimeoutMs: must be a whole number/);
    t = await createTestEngine();
    await expect(t.advance('soon')).rejects.toThrow(ValidationError);
    await expect(t.advance('soon')).rejects.toThrow(/duration/);
    const first = t.advance('1d');
    await expect(t.advance('1d')).rejects.toThrow(/already under way/);
    await first;
  });
});
