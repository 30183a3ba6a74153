import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { ValidationError } from '../errors.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';

/** Tasks taking named rate limits before their handler runs: no room, back to the queue, no attempt used. */
describe.each(backends)('rate limits on tasks on $name', (backend) => {
  let engine: Engine;
  let second: () => Promise<Engine>;
  let close: () => Promise<void>;
  beforeEach(async () => ({ engine, second, close } = await testEngine(backend, { pollMs: 50 })));
  afterEach(() => close());

  const refusal = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).problems[0]!;
  };

  it("runs 20 tasks through 3 engines' workers at 5 per 2 s, each once, no attempt used up by waiting", async () => {
    await engine.limits.define({ name: 'crm', limit: 5, period: '2s' });
    const calls: Array<{ id: string; at: number }> = [];
    const handler = async (_payload: unknown, ctx: { task: { id: string } }) => {
      calls.push({ id: ctx.task.id, at: Date.now() });
      return null;
    };
    // one attempt each: a wait that used one up would leave the task dead
    await engine.queue.enqueueMany(
      'rq',
      Array.from({ length: 20 }, (_, n) => ({ payload: { n }, maxAttempts: 1, rateLimit: { name: 'crm' } })),
    );
    const others = [await second(), await second()];
    for (const e of [engine, ...others]) e.work('rq', handler, { concurrency: 4 });
    const done = await eventually(async () => {
      const tasks = await engine.queue.list({ queue: 'rq', state: 'completed', limit: 100 });
      return tasks.length === 20 ? tasks : undefined;
    }, 30_000);
    expect(done.every((t) => t.attempts === 1)).toBe(true);
    expect(calls).toHaveLength(20);
    expect(new Set(calls.map((c) => c.id)).size).toBe(20);
    // GCRA, burst 5: five at once, then one every 400 ms; a window of w ms holds at most 5 + w/400 calls
    // (the handlers' clock, a little after the database's take: 100 ms of slack)
    const at = calls.map((c) => c.at).sort((a, b) => a - b);
    for (let i = 0; i < at.length; i++)
      for (let j = i + 5; j < at.length; j++) expect(at[j]! - at[i]!).toBeGreaterThanOrEqual((j - i - 4) * 400 - 100);
  }, 40_000);

  it("keeps one bucket per constant key; a task without room waits ready at the bucket's next slot, attempts 0", async () => {
    await engine.limits.define({ name: 'per-tenant', limit: 1, period: '1h', key: 'input.tenant' });
    const ran: string[] = [];
    const [a, b, a2] = await engine.queue.enqueueMany('kq', [
      { payload: 'a', rateLimit: { name: 'per-tenant', key: 'a' } },
      { payload: 'b', rateLimit: { name: 'per-tenant', key: 'b' } },
      { payload: 'a2', rateLimit: { name: 'per-tenant', key: 'a' } },
    ]);
    engine.work('kq', async (payload) => void ran.push(payload as string), { concurrency: 1 });
    await eventually(async () => (await engine.queue.get(b!.task.id)).state === 'completed');
    expect((await engine.queue.get(a!.task.id)).state).toBe('completed');
    const waiting = await eventually(async () => {
      const t = await engine.queue.get(a2!.task.id);
      return t.runAt > Date.now() + 30 * 60_000 ? t : undefined;
    });
    expect(waiting).toMatchObject({
      state: 'ready',
      attempts: 0,
      rateLimit: { name: 'per-tenant', key: 'a', units: 1 },
    });
    expect(waiting.runAt).toBeLessThanOrEqual(Date.now() + 3_600_000 + 1000);
    expect(ran.sort()).toEqual(['a', 'b']);
  });

  it('refuses at the enqueue a limit that does not exist, bad units, or a per-key limit without a key, naming the field', async () => {
    await engine.limits.define({ name: 'small', limit: 3, period: '1s' });
    await engine.limits.define({ name: 'keyed', limit: 3, period: '1s', key: 'input.user' });
    expect(await refusal(engine.queue.enqueue('bq', 1, { rateLimit: { name: 'nope' } }))).toMatchObject({
      path: 'rateLimit.name',
      message: "no rate limit named 'nope'",
    });
    expect((await refusal(engine.queue.enqueue('bq', 1, { rateLimit: { name: 'small', units: 4 } }))).path).toBe(
      'rateLimit.units',
    );
    expect((await refusal(engine.queue.enqueue('bq', 1, { rateLimit: { name: 'small', units: -1 } }))).path).toBe(
      'rateLimit.units',
    );
    expect((await refusal(engine.queue.enqueue('bq', 1, { rateLimit: { name: 'keyed' } }))).path).toBe('rateLimit.key');
    const batch = refusal(
      engine.queue.enqueueMany('bq', [{ payload: 1 }, { payload: 2, rateLimit: { name: 'nope' } }]),
    );
    expect((await batch).path).toBe('items[1].rateLimit.name');
    // nothing of the refused batch was written
    expect(await engine.queue.list({ queue: 'bq' })).toHaveLength(0);
  });
});
