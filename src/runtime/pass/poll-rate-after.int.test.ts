import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../engine.js';
import { RetryAfterError } from '../../errors.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import { RUN_EVENT } from '../events.js';
import { workflow, type Workflow } from '../workflow.js';

const HOUR = 3_600_000;

/** What a poll's request leaves to its rate limit: a 429's push of the next slot, and a charge from its answer. */
describe.each(backends)('a poll leaving its rate limit what a request did on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });
  const engineWith = async (polling: Workflow): Promise<Engine> => {
    const made = await testEngine(backend, { workflows: [polling], pollMs: 50 });
    close = made.close;
    return made.engine;
  };
  const journal = (engine: Engine, id: string) => engine.journal.readStream(`run:${id}`);
  const take = (engine: Engine, name: string, units: number) =>
    engine.store.rateTake({ uses: [{ name, key: '', units }] });

  it("pushes the limit's next slot when a request fails with a 429's Retry-After, for every taker", async () => {
    let pushedAt = 0;
    const polling = workflow('poll-429', async (ctx) =>
      ctx.poll(
        'status',
        async () => {
          pushedAt = Date.now();
          throw new RetryAfterError('429 Too Many Requests', HOUR);
        },
        { until: () => true, initialDelay: 0, rateLimit: { name: 'api' } },
      ),
    );
    const engine = await engineWith(polling);
    await engine.limits.define({ name: 'api', limit: 100, period: '1s' });
    await engine.start(polling, {}, { id: 'p429' });
    await eventually(async () => (await journal(engine, 'p429')).some((e) => e.type === RUN_EVENT.pollAttempted));
    // 99 of 100 units free, yet any other taker is told to wait for the pushed slot
    const shared = await take(engine, 'api', 1);
    expect(shared).toMatchObject({ ok: false, name: 'api' });
    expect((shared as { retryAt: number }).retryAt).toBeGreaterThanOrEqual(pushedAt + HOUR - 1000);
  });

  it("charges each request's answer past the units it took, journaled with the request", async () => {
    let requests = 0;
    const polling = workflow('poll-charge', async (ctx) =>
      ctx.poll('status', async () => ({ done: ++requests >= 2, used: 4 }), {
        until: (answer) => answer.done,
        initialDelay: 0,
        interval: 10,
        rateLimit: { name: 'tokens', units: 1, charge: (answer: { used: number }) => answer.used },
      }),
    );
    const engine = await engineWith(polling);
    await engine.limits.define({ name: 'tokens', limit: 10, period: '1h' });
    const run = await engine.start(polling, {}, { id: 'pc' });
    expect(await run.result()).toEqual({ done: true, used: 4 });
    const charged = (await journal(engine, 'pc')).filter((e) => e.type === RUN_EVENT.stepRateCharged);
    expect(charged.map((e) => e.data)).toEqual([
      expect.objectContaining({ attempt: 1, charged: [{ name: 'tokens', key: '', units: 3 }] }),
      expect.objectContaining({ attempt: 2, charged: [{ name: 'tokens', key: '', units: 3 }] }),
    ]);
    // two requests of 4 units: 8 of 10 used, 3 more do not fit, 2 do
    expect(await take(engine, 'tokens', 3)).toMatchObject({ ok: false });
    expect(await take(engine, 'tokens', 2)).toEqual({ ok: true });
  });

  it('fails a poll whose charge is not a function, naming the field', async () => {
    const polling = workflow('poll-bad-charge', async (ctx) =>
      ctx.poll('status', async () => 1, {
        until: () => true,
        initialDelay: 0,
        rateLimit: { name: 'tokens', charge: 5 as never },
      }),
    );
    const engine = await engineWith(polling);
    const run = await engine.start(polling, {}, { id: 'pb' });
    await expect(run.result()).rejects.toThrow('step(status).rateLimit.charge: must be a function of the output');
  });
});
