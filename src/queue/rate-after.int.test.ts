import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { RetryAfterError, ValidationError } from '../errors.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';

const HOUR = 3_600_000;

/** What a task's call leaves to its rate limit after its handler: a 429's push of the next slot, and a charge. */
describe.each(backends)('a task leaving its rate limit what the call did on $name', (backend) => {
  const sharing = workflow('sharing-api', async (ctx) =>
    ctx.step('call', async () => 'ok', { rateLimit: { name: 'api' } }),
  );
  let engine: Engine;
  let close: () => Promise<void>;
  beforeEach(async () => ({ engine, close } = await testEngine(backend, { workflows: [sharing], pollMs: 50 })));
  afterEach(() => close());

  const take = (name: string, units: number, key = '') => engine.store.rateTake({ uses: [{ name, key, units }] });
  const settled = (id: string, state: string) =>
    eventually(async () => (await engine.queue.get(id)).state === state, 15_000);

  it("pushes the limit's next slot on a 429: a second task and a step sharing the limit wait until then", async () => {
    await engine.limits.define({ name: 'api', limit: 100, period: '1s' });
    let pushedAt = 0;
    const ran: string[] = [];
    const handler = async (payload: string) => {
      if (payload !== 'first') return void ran.push(payload);
      pushedAt = Date.now();
      throw new RetryAfterError('429 Too Many Requests', HOUR);
    };
    engine.work('tq', handler, { concurrency: 1 });
    const first = await engine.queue.enqueue('tq', 'first', { maxAttempts: 1, rateLimit: { name: 'api' } });
    await settled(first.task.id, 'dead');
    // 99 units of 100 were free: only the push holds the next task back, ready at the pushed slot, no attempt used
    const second = await engine.queue.enqueue('tq', 'second', { rateLimit: { name: 'api' } });
    const waiting = await eventually(async () => {
      const task = await engine.queue.get(second.task.id);
      return task.runAt >= pushedAt + HOUR - 1000 ? task : undefined;
    });
    expect(waiting).toMatchObject({ state: 'ready', attempts: 0 });
    await engine.start(sharing, {}, { id: 'step-1' });
    const view = await eventually(async () => {
      const found = await engine.runs.find('step-1');
      return found?.status === 'waiting' && found;
    });
    expect(view.waitingFor).toMatch(/^rate limit api — next slot /);
    expect(Date.parse(view.waitingFor!.split('next slot ')[1]!)).toBeGreaterThanOrEqual(pushedAt + HOUR - 1000);
    expect(ran).toEqual([]);
  });

  it("pushes the limit's next slot on a 429 a worker over HTTP reports (retry_after_ms)", async () => {
    await engine.limits.define({ name: 'api', limit: 100, period: '1s' });
    const remote = engine.queue.remote({ leaseMs: 30_000, pollMs: 200, maxResultBytes: 1 << 20 });
    const { task } = await engine.queue.enqueue('far', 'first', { rateLimit: { name: 'api' } });
    const [claimed] = await remote.claim({ queue: 'far', worker: 'far-1', max: 1, waitMs: 0 });
    const pushedAt = Date.now();
    await remote.fail(
      { id: task.id, leaseToken: claimed!.leaseToken! },
      { error: '429 Too Many Requests', retryable: true, retryAfterMs: HOUR },
    );
    // 99 units of 100 were free: only the push refuses the next take
    const refused = (await take('api', 1)) as { ok: boolean; retryAt: number };
    expect(refused.ok).toBe(false);
    expect(refused.retryAt).toBeGreaterThanOrEqual(pushedAt + HOUR - 1000);
  });

  it('charges what the handler really used past the units taken, in the bucket of its key', async () => {
    await engine.limits.define({ name: 'tokens', limit: 10, period: '1h', key: 'input.tenant' });
    engine.work('cq', async () => ({ tokens: 8 }), { charge: (result: { tokens: number }) => result.tokens });
    const task = await engine.queue.enqueue('cq', null, { rateLimit: { name: 'tokens', key: 'a' } });
    await settled(task.task.id, 'completed');
    // 8 of 10 used in bucket a (1 taken, 7 charged): 3 more do not fit, 2 do; bucket b is untouched
    expect(await take('tokens', 3, 'a')).toMatchObject({ ok: false });
    expect(await take('tokens', 2, 'a')).toEqual({ ok: true });
    expect(await take('tokens', 10, 'b')).toEqual({ ok: true });
  });

  it('ignores a charge that is not a positive number, reporting it at charge; the task completes', async () => {
    await engine.limits.define({ name: 'tokens', limit: 10, period: '1h' });
    const errors: unknown[] = [];
    engine.work('nq', async () => ({ tokens: -5 }), {
      charge: (result: { tokens: number }) => result.tokens,
      onError: (error) => errors.push(error),
    });
    const task = await engine.queue.enqueue('nq', null, { rateLimit: { name: 'tokens' } });
    await settled(task.task.id, 'completed');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(ValidationError);
    expect((errors[0] as ValidationError).problems[0]).toMatchObject({ path: 'charge' });
    expect((errors[0] as Error).message).toMatch(/positive number of units \(got -5\)/);
    // only the unit taken counts: 9 fit
    expect(await take('tokens', 9)).toEqual({ ok: true });
  });

  it('refuses a charge option that is not a function, naming the field', () => {
    let refused: unknown;
    try {
      engine.work('bq', async () => null, { charge: 12 as never });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).problems[0]).toMatchObject({ path: 'charge' });
  });
});
