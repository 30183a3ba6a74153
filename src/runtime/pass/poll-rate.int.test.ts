import { afterEach, describe, expect, it } from 'vitest';
import { backends } from '../../testing/backends.js';
import { testEngine } from '../../testing/engine.js';
import { RUN_EVENT } from '../events.js';
import { workflow } from '../workflow.js';

/** A poll taking a named rate limit: each request takes it first, waiting durably for room. */
describe.each(backends)('rate limits on polls on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });

  it('spaces the requests of a poll by its limit, each waiting durably, and completes with the answer', async () => {
    const requests: number[] = [];
    const polling = workflow('rated-poll', async (ctx) =>
      ctx.poll(
        'status',
        async () => {
          requests.push(Date.now());
          return requests.length;
        },
        { until: (n) => n >= 3, initialDelay: 0, interval: 10, rateLimit: { name: 'svc' } },
      ),
    );
    const made = await testEngine(backend, { workflows: [polling], pollMs: 50 });
    close = made.close;
    const engine = made.engine;
    await engine.limits.define({ name: 'svc', limit: 1, period: '1s' });
    const run = await engine.start(polling, {}, { id: 'p1' });
    expect(await run.result()).toBe(3);
    expect(requests).toHaveLength(3);
    // one request a second (the request's clock, a little after the database's take); unlimited, 10 ms apart
    expect(requests[1]! - requests[0]!).toBeGreaterThanOrEqual(900);
    expect(requests[2]! - requests[0]!).toBeGreaterThanOrEqual(1900);
    const events = await engine.journal.readStream('run:p1');
    expect(events.filter((e) => e.type === RUN_EVENT.stepRateWaiting).length).toBeGreaterThanOrEqual(2);
    // each request asked once it had room: as many answered asks as requests
    const asks = events.filter((e) => e.type === RUN_EVENT.stepRateRequested);
    const waits = events.filter((e) => e.type === RUN_EVENT.stepRateWaiting);
    expect(asks.length - waits.length).toBe(3);
  });

  it('fails a poll naming an unknown limit, naming the field', async () => {
    const polling = workflow('rated-poll-bad', async (ctx) =>
      ctx.poll('status', async () => 1, { until: () => true, initialDelay: 0, rateLimit: { name: 'nope' } }),
    );
    const made = await testEngine(backend, { workflows: [polling], pollMs: 50 });
    close = made.close;
    const run = await made.engine.start(polling, {}, { id: 'p2' });
    await expect(run.result()).rejects.toThrow("step(status).rateLimit.name: no rate limit named 'nope'");
  });
});
