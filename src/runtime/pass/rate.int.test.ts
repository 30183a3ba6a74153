import { afterEach, describe, expect, it } from 'vitest';
import { RetryAfterError } from '../../errors.js';
import type { Engine } from '../../engine.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import { RUN_EVENT } from '../events.js';
import { workflow, type Workflow } from '../workflow.js';

type Data = { seq: number; attempt: number; round: number; retryAt: number; reason: string };

/** Steps taking named rate limits: durable waits for room, shared by every run, charged once. */
describe.each(backends)('rate limits on steps on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });
  const engineWith = async (...workflows: Workflow[]): Promise<Engine> => {
    const made = await testEngine(backend, { workflows, pollMs: 50 });
    close = made.close;
    return made.engine;
  };
  const journal = (engine: Engine, id: string) => engine.journal.readStream(`run:${id}`);

  it('lets 5 runs sharing 2 per second through at that rate, each waiting durably, all completing', async () => {
    const call = workflow('rated-call', async (ctx, input: { n: number }) =>
      ctx.step('call', async () => input.n, { rateLimit: { name: 'api' } }),
    );
    const engine = await engineWith(call);
    await engine.limits.define({ name: 'api', limit: 2, period: '1s' });
    const runs = await Promise.all([0, 1, 2, 3, 4].map((n) => engine.start(call, { n }, { id: `r${n}` })));
    expect(await Promise.all(runs.map((r) => r.result()))).toEqual([0, 1, 2, 3, 4]);
    const takes: number[] = [];
    let waits = 0;
    for (const n of [0, 1, 2, 3, 4]) {
      const events = await journal(engine, `r${n}`);
      const waited = new Set(
        events.filter((e) => e.type === RUN_EVENT.stepRateWaiting).map((e) => (e.data as Data).round),
      );
      waits += waited.size;
      const asks = events.filter((e) => e.type === RUN_EVENT.stepRateRequested);
      // the ask that found room is the last; each earlier one was answered with a wait, journaled
      expect(asks.length).toBe(waited.size + 1);
      takes.push(asks.at(-1)!.timestamp);
      expect(events.filter((e) => e.type === RUN_EVENT.stepStarted)).toHaveLength(1);
    }
    expect(waits).toBeGreaterThanOrEqual(3);
    // GCRA, burst 2: the first two at once, then one every 500 ms (timestamps are the database clock's)
    takes.sort((a, b) => a - b);
    for (let k = 2; k < takes.length; k++) expect(takes[k]! - takes[0]!).toBeGreaterThanOrEqual((k - 1) * 500 - 5);
  });

  it('shows a waiting run with its reason until the limit has room, asking once per slot (no spinning)', async () => {
    const call = workflow('rated-slow', async (ctx) =>
      ctx.step('call', async () => 'done', { rateLimit: { name: 'slow' } }),
    );
    const engine = await engineWith(call);
    await engine.limits.define({ name: 'slow', limit: 1, period: '2s' });
    await engine.store.rateTake({ uses: [{ name: 'slow', key: '', units: 1 }] });
    const run = await engine.start(call, {}, { id: 'w1' });
    const waiting = await eventually(async () => {
      const view = await engine.runs.find('w1');
      return view?.status === 'waiting' ? view : undefined;
    });
    expect((waiting as { waitingFor?: string }).waitingFor).toMatch(/^rate limit slow — next slot \d{4}-\d\d-\d\dT/);
    expect(await run.result()).toBe('done');
    expect((await engine.runs.find('w1'))?.status).toBe('success');
    // the first ask, answered with a wait; the one its timer woke, answered with room
    expect((await journal(engine, 'w1')).filter((e) => e.type === RUN_EVENT.stepRateRequested)).toHaveLength(2);
  });

  it("resolves a limit's key from the run's input: one bucket per key", async () => {
    const call = workflow('rated-keyed', async (ctx, input: { user: string }) =>
      ctx.step('call', async () => input.user, { rateLimit: { name: 'per-user' } }),
    );
    const engine = await engineWith(call);
    await engine.limits.define({ name: 'per-user', limit: 1, period: '1h', key: 'input.user' });
    const a = await engine.start(call, { user: 'a' }, { id: 'ka' });
    const b = await engine.start(call, { user: 'b' }, { id: 'kb' });
    expect([await a.result(), await b.result()]).toEqual(['a', 'b']);
    expect(await engine.store.rateTake({ uses: [{ name: 'per-user', key: 'a', units: 1 }] })).toMatchObject({
      ok: false,
    });
    expect(await engine.store.rateTake({ uses: [{ name: 'per-user', key: 'c', units: 1 }] })).toEqual({ ok: true });
    const none = await engine.start(call, {} as { user: string }, { id: 'knone' });
    await expect(none.result()).rejects.toThrow(/input.user' is not in the run's input/);
  });

  it('charges each generation of a run that continues as new for its own takes', async () => {
    const loop = workflow('rated-loop', async (ctx, input: { n: number }) => {
      await ctx.step('call', async () => input.n, { rateLimit: { name: 'gen' } });
      if (input.n < 1) return ctx.continueAsNew({ n: input.n + 1 });
      return input.n;
    });
    const engine = await engineWith(loop);
    await engine.limits.define({ name: 'gen', limit: 3, period: '1h' });
    const run = await engine.start(loop, { n: 0 }, { id: 'g1' });
    expect(await run.result()).toBe(1);
    // two generations, two units: of 3 an hour, one is left
    expect(await engine.store.rateTake({ uses: [{ name: 'gen', key: '', units: 1 }] })).toEqual({ ok: true });
    expect(await engine.store.rateTake({ uses: [{ name: 'gen', key: '', units: 1 }] })).toMatchObject({ ok: false });
  });

  it('fails a step naming an unknown limit, naming the field', async () => {
    const call = workflow('rated-unknown', async (ctx) =>
      ctx.step('call', async () => 1, { rateLimit: { name: 'nope' } }),
    );
    const engine = await engineWith(call);
    const run = await engine.start(call, {}, { id: 'u1' });
    await expect(run.result()).rejects.toThrow("step(call).rateLimit.name: no rate limit named 'nope'");
    expect((await journal(engine, 'u1')).some((e) => e.type === RUN_EVENT.stepStarted)).toBe(false);
  });

  it('charges what a call really used, and a 429 with Retry-After defers the limit for every run', async () => {
    let tries = 0;
    const call = workflow('rated-charge', async (ctx) => {
      await ctx.step('model', async () => ({ tokens: 10 }), {
        rateLimit: { name: 'tokens', units: 1, charge: (o: { tokens: number }) => o.tokens },
      });
      return ctx.step(
        'flaky',
        async () => {
          if (++tries === 1) throw new RetryAfterError('429 Too Many Requests', 1500);
          return 'ok';
        },
        { rateLimit: { name: 'api' }, retry: { backoff: { base: 10 } } },
      );
    });
    const engine = await engineWith(call);
    await engine.limits.define({ name: 'tokens', limit: 10, period: '1h' });
    await engine.limits.define({ name: 'api', limit: 100, period: '1s' });
    const run = await engine.start(call, {}, { id: 'c1' });
    const failed = await eventually(async () =>
      (await journal(engine, 'c1')).find((e) => e.type === RUN_EVENT.stepFailed),
    );
    // the 429 pushed the shared limit's next slot: any other taker is told to wait about 1.5 s
    const shared = await engine.store.rateTake({ uses: [{ name: 'api', key: '', units: 1 }] });
    expect(shared).toMatchObject({ ok: false });
    expect((shared as { retryAt: number }).retryAt).toBeGreaterThanOrEqual(failed.timestamp + 1400);
    expect(await run.result()).toBe('ok');
    const charged = (await journal(engine, 'c1')).find((e) => e.type === RUN_EVENT.stepRateCharged);
    expect(charged?.data).toMatchObject({ charged: [{ name: 'tokens', key: '', units: 9 }] });
    expect(await engine.store.rateTake({ uses: [{ name: 'tokens', key: '', units: 1 }] })).toMatchObject({ ok: false });
  });
});
