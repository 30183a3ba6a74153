import { afterEach, describe, expect, it, vi } from 'vitest';
import { CancelledError, ConflictError, TerminalError } from '../errors.js';
import type { Engine } from '../engine.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { RUN_QUEUE } from './runtime.js';
import { workflow, type Workflow } from './workflow.js';

const fast = { maxAttempts: 3, backoff: { base: '10ms', factor: 2, max: '50ms' } };

describe.each(backends)('durable runs on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });
  const engineWith = async (...workflows: Workflow[]): Promise<Engine> => {
    const made = await testEngine(backend, { workflows, pollMs: 100 });
    close = made.close;
    return made.engine;
  };
  /** An engine that polls once a minute (only wake-ups move its runs), its run worker idle after one run of `quick`. */
  const quietEngine = async (
    quick: Workflow<null, number>,
    others: Workflow[] = [],
    options: { runConcurrency?: number } = {},
  ): Promise<Engine> => {
    const made = await testEngine(backend, { workflows: [quick, ...others], pollMs: 60_000, ...options });
    close = made.close;
    expect(await (await made.engine.start(quick, null, { id: 'quick-0' })).result()).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    return made.engine;
  };
  const types = async (engine: Engine, id: string) => (await engine.journal.readStream(`run:${id}`)).map((e) => e.type);

  it('hands the first pass of a run started here to an idle run worker, claimed as it is inserted', async () => {
    let gate = Promise.resolve();
    const held = workflow('held', async (ctx) => ctx.step('wait', async () => (await gate, 'ok')));
    const engine = await engineWith(held);
    // once a run has come and gone, the run worker is idle (its first claim may still be out before)
    expect(await (await engine.start(held, null, { id: 'held-0' })).result()).toBe('ok');
    await new Promise((resolve) => setTimeout(resolve, 50));
    let open!: () => void;
    gate = new Promise<void>((resolve) => (open = resolve));
    const run = await engine.start(held, null, { id: 'held-1' });
    // running as the start returns: no claim, no wake-up in between
    const [pass] = (await engine.queue.list({ queue: RUN_QUEUE })).filter((t) => t.orderingKey === 'held-1');
    expect(pass).toMatchObject({ state: 'running', attempts: 1 });
    open();
    expect(await run.result()).toBe('ok');
    const history = await eventually(async () =>
      (await engine.queue.get(pass!.id)).state === 'completed' ? engine.queue.history(pass!.id) : undefined,
    );
    expect(history.map((e) => e.type)).toEqual(['task.enqueued', 'task.completed']);
    // a run that exists already starts nothing, and the worker's reserved slot is free again
    await engine.start(held, null, { id: 'held-1' });
    expect(await (await engine.start(held, null, { id: 'held-2' })).result()).toBe('ok');
  });

  it('runs the pass its start claimed here without reading the journal; a cancel right after the start still reaches it', async () => {
    const quick = workflow('quick', async (ctx) => ctx.step('one', async () => 1));
    const slow = workflow('slow', async (ctx) =>
      ctx.step(
        'wait',
        ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      ),
    );
    // no poll for a minute: only a wake-up can bring the cancel to the pass, whose step never ends on its own
    const engine = await quietEngine(quick, [slow]);
    const reads = vi.spyOn(engine.store, 'eventReadStream');
    expect(await (await engine.start(quick, null, { id: 'quick-1' })).result()).toBe(1);
    expect(reads.mock.calls.filter(([p]) => p.streamId === 'run:quick-1')).toEqual([]);
    const run = await engine.start(slow, null, { id: 'slow-1' });
    const [pass] = (await engine.queue.list({ queue: RUN_QUEUE })).filter((t) => t.orderingKey === 'slow-1');
    expect(pass).toMatchObject({ state: 'running', attempts: 1 });
    await engine.cancel('slow-1');
    await expect(run.result()).rejects.toThrow(CancelledError);
  });

  it('hands the first pass of a run started in a transaction to an idle run worker once it commits; a rollback frees the slot', async () => {
    const quick = workflow('quick', async (ctx) => ctx.step('one', async () => 1));
    // one run worker slot, no poll for a minute: a slot kept for a rolled-back start would stop every later run
    const engine = await quietEngine(quick, [], { runConcurrency: 1 });
    const reads = vi.spyOn(engine.store, 'eventReadStream');
    await engine.store.transaction(async (tx) => void (await engine.start(quick, null, { id: 'quick-1', tx })));
    expect(await engine.runtime.handle('quick-1').result()).toBe(1);
    // claimed as it was inserted and begun as the transaction committed: its pass read nothing
    expect(reads.mock.calls.filter(([p]) => p.streamId === 'run:quick-1')).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const failed = engine.store.transaction(async (tx) => {
      await engine.start(quick, null, { id: 'quick-gone', tx });
      throw new Error('boom');
    });
    await expect(failed).rejects.toThrow('boom');
    expect((await engine.queue.list({ queue: RUN_QUEUE })).filter((t) => t.orderingKey === 'quick-gone')).toEqual([]);
    expect(await (await engine.start(quick, null, { id: 'quick-2' })).result()).toBe(1);
  });

  it('runs steps once each, journals them, and projects the run with its steps', async () => {
    const calls: string[] = [];
    const greet = workflow('greet', async (ctx, input: { name: string }) => {
      const upper = await ctx.step('upper', async () => (calls.push('upper'), input.name.toUpperCase()));
      const [a, b] = await Promise.all([
        ctx.step('a', async () => (calls.push('a'), 1)),
        ctx.step('b', async () => (calls.push('b'), 2)),
      ]);
      return { greeting: `Hello ${upper}`, sum: a + b };
    });
    const engine = await engineWith(greet);
    const run = await engine.start(greet, { name: 'ada' }, { id: 'greet-1' });
    expect(await run.result()).toEqual({ greeting: 'Hello ADA', sum: 3 });
    expect(calls.sort()).toEqual(['a', 'b', 'upper']);
    const view = await engine.run('greet-1');
    expect(view).toMatchObject({
      status: 'success',
      workflow: 'greet',
      input: { name: 'ada' },
      output: { greeting: 'Hello ADA', sum: 3 },
    });
    expect(view.steps.map((s) => [s.name, s.status, s.attempts])).toEqual([
      ['upper', 'success', 1],
      ['a', 'success', 1],
      ['b', 'success', 1],
    ]);
    expect(view.steps[0]!.durationMs).toBeGreaterThanOrEqual(0);
    const journaled = await types(engine, 'greet-1');
    expect(journaled.slice(0, 3)).toEqual(['run.started', 'step.started', 'step.completed']);
    // the parallel steps interleave in any order
    expect(journaled.slice(3, 7).sort()).toEqual(['step.completed', 'step.completed', 'step.started', 'step.started']);
    expect(journaled.at(-1)).toBe('run.completed');
  });

  it('waits for a run whose pass runs here without reading its view; a pass that suspends wakes the waiter, which reads it then', async () => {
    const quick = workflow('quick', async (ctx) => ctx.step('one', async () => 1));
    const napping = workflow('napping', async (ctx) => {
      await ctx.sleep('nap', '150ms');
      return ctx.step('after', async () => 2);
    });
    // no poll for a minute: only the run's end, or its pass's, can wake a waiter
    const engine = await quietEngine(quick, [napping]);
    const reads = vi.spyOn(engine.store, 'projectionGet');
    const run = await engine.start(quick, null, { id: 'quick-1' });
    expect(await run.result({ pollMs: 60_000 })).toBe(1);
    expect(reads.mock.calls.filter(([p]) => p.name === 'run' && p.key === 'quick-1')).toEqual([]);
    const nap = await engine.start(napping, null, { id: 'nap-1' });
    expect(await nap.result({ pollMs: 60_000 })).toBe(2);
    expect(reads.mock.calls.filter(([p]) => p.name === 'run' && p.key === 'nap-1').length).toBeGreaterThan(0);
  });

  it('returns the existing run for a start with an id that exists', async () => {
    let runs = 0;
    const once = workflow('once', async (ctx) => ctx.step('count', async () => ++runs));
    const engine = await engineWith(once);
    const [first, second] = await Promise.all([
      engine.start(once, {}, { id: 'same' }),
      engine.start(once, {}, { id: 'same' }),
    ]);
    expect(await first.result()).toBe(1);
    expect(await second.result()).toBe(1);
    expect((await engine.start(once, {}, { id: 'same' })).id).toBe('same');
    expect((await types(engine, 'same')).filter((t) => t === 'run.started')).toHaveLength(1);
  });

  it('starts the runs started at once in one commit; a run that exists among them starts nothing, the others start', async () => {
    const one = workflow('one', async (ctx) => ctx.step('s', async () => 1));
    const engine = await engineWith(one);
    expect(await (await engine.start(one, 'first', { id: 'exists' })).result()).toBe(1);
    const batches: number[] = [];
    engine.on('store:batch', (b) => batches.push(b.writes));
    const ids = Array.from({ length: 20 }, (_, i) => `together-${i}`);
    const handles = await Promise.all(ids.map((id) => engine.start(one, null, { id })));
    expect(Math.max(...batches)).toBeGreaterThanOrEqual(20);
    const again = await Promise.all([
      ...ids.slice(0, 5).map((id) => engine.start(one, null, { id: `${id}-b` })),
      engine.start(one, 'second', { id: 'exists' }),
    ]);
    expect(again.map((h) => h.id)).toEqual([...ids.slice(0, 5).map((id) => `${id}-b`), 'exists']);
    for (const handle of [...handles, ...again]) expect(await handle.result()).toBe(1);
    const started = (await engine.journal.readStream('run:exists')).filter((e) => e.type === 'run.started');
    expect(started.map((e) => (e.data as { input: unknown }).input)).toEqual(['first']);
  });

  it('retries a failing step with backoff and the same idempotency key', async () => {
    const seen: Array<{ key: string; attempt: number }> = [];
    const flaky = workflow('flaky', async (ctx) =>
      ctx.step(
        'call',
        async ({ idempotencyKey, attempt }) => {
          seen.push({ key: idempotencyKey, attempt });
          if (attempt < 3) throw new Error(`503 on try ${attempt}`);
          return 'ok';
        },
        { retry: fast },
      ),
    );
    const engine = await engineWith(flaky);
    const run = await engine.start(flaky, {}, { id: 'flaky-1' });
    expect(await run.result()).toBe('ok');
    expect(seen.map((s) => s.attempt)).toEqual([1, 2, 3]);
    expect(new Set(seen.map((s) => s.key))).toEqual(new Set(['flaky-1:call#1']));
    expect((await engine.run('flaky-1')).steps[0]).toMatchObject({ status: 'success', attempts: 3 });
  });

  it('never retries a TerminalError, and compensates completed steps in reverse order when the run fails', async () => {
    const undone: string[] = [];
    const order = workflow('order', async (ctx) => {
      await ctx.step('reserve', async () => 'r-1', { compensate: async (id) => void undone.push(`release ${id}`) });
      await ctx.step('charge', async () => 'c-1', { compensate: async (id) => void undone.push(`refund ${id}`) });
      await ctx.step(
        'ship',
        async () => {
          throw new TerminalError('address rejected');
        },
        { retry: fast },
      );
    });
    const engine = await engineWith(order);
    const run = await engine.start(order, {}, { id: 'order-1' });
    await expect(run.result()).rejects.toThrow('TerminalError: address rejected');
    expect(undone).toEqual(['refund c-1', 'release r-1']);
    const view = await engine.run('order-1');
    expect(view).toMatchObject({ status: 'failed', compensations: { ran: 2, failed: 0 } });
    expect(view.steps.find((s) => s.name === 'ship')).toMatchObject({ status: 'failed', attempts: 1 });
  });

  it('sleeps durably and never wakes early', async () => {
    const nap = workflow('nap', async (ctx) => {
      const before = await ctx.now();
      await ctx.sleep('nap', '300ms');
      return { before, after: Date.now() };
    });
    const engine = await engineWith(nap);
    const run = await engine.start(nap, {}, { id: 'nap-1' });
    await eventually(async () => (await engine.run('nap-1')).status === 'sleeping');
    const { before, after } = (await run.result()) as { before: number; after: number };
    expect(after - before).toBeGreaterThanOrEqual(300);
    expect(await types(engine, 'nap-1')).toContain('sleep.completed');
  });

  it('delivers each signal once, sent before or after the wait began, and ignores a repeated key', async () => {
    const approval = workflow('approval', async (ctx) => {
      const first = await ctx.waitForEvent<{ ok: boolean }>('approve');
      const second = await ctx.waitForEvent<{ ok: boolean }>('approve');
      const none = await ctx.waitForEvent('approve', { timeout: '200ms' });
      return { first, second, none };
    });
    const engine = await engineWith(approval);
    await engine.start(approval, {}, { id: 'appr-1' });
    await engine.signal('appr-1', 'approve', { ok: true }, { idempotencyKey: 'k1' });
    await engine.signal('appr-1', 'approve', { ok: true }, { idempotencyKey: 'k1' });
    await eventually(async () => (await types(engine, 'appr-1')).filter((t) => t === 'wait.started').length === 2);
    await engine.signal('appr-1', 'approve', { ok: false }, { idempotencyKey: 'k2' });
    const result = await engine.runtime.handle('appr-1').result();
    expect(result).toEqual({ first: { ok: true }, second: { ok: false }, none: null });
    const events = await types(engine, 'appr-1');
    expect(events.filter((t) => t === 'signal.sent')).toHaveLength(2);
    expect(events.filter((t) => t === 'wait.timed_out')).toHaveLength(1);
  });

  it('cancels a waiting run: compensations run once, it ends cancelled, and cancelling again conflicts', async () => {
    const undone: string[] = [];
    const trip = workflow('trip', async (ctx) => {
      await ctx.step('book', async () => 'b-1', { compensate: async (id) => void undone.push(id) });
      await ctx.waitForEvent('go');
      await ctx.step('never', async () => undone.push('should not run'));
    });
    const engine = await engineWith(trip);
    const run = await engine.start(trip, {}, { id: 'trip-1' });
    await eventually(async () => (await engine.run('trip-1')).status === 'waiting');
    await engine.cancel('trip-1');
    await expect(run.result()).rejects.toThrow(CancelledError);
    expect(undone).toEqual(['b-1']);
    expect(await engine.run('trip-1')).toMatchObject({ status: 'cancelled', compensations: { ran: 1, failed: 0 } });
    await expect(engine.cancel('trip-1')).rejects.toThrow(ConflictError);
  });

  it('fires the running step signal on cancel', async () => {
    let aborted: unknown = null;
    const slow = workflow('slow', async (ctx) =>
      ctx.step(
        'wait',
        ({ signal }) =>
          new Promise((_, reject) => signal.addEventListener('abort', () => reject((aborted = signal.reason)))),
      ),
    );
    const engine = await engineWith(slow);
    const run = await engine.start(slow, {}, { id: 'slow-1' });
    await eventually(async () => (await engine.run('slow-1')).steps[0]?.status === 'running');
    await engine.cancel('slow-1');
    await expect(run.result()).rejects.toThrow(CancelledError);
    expect(aborted).toBeInstanceOf(CancelledError);
  });

  it('fails a run whose code asks for another call than the journal holds', async () => {
    let version = 1;
    const drift = workflow('drift', async (ctx) => {
      await ctx.step(version === 1 ? 'old-name' : 'new-name', async () => 1);
      await ctx.sleep('pause', '1s');
      return 'done';
    });
    const engine = await engineWith(drift);
    const run = await engine.start(drift, {}, { id: 'drift-1' });
    await eventually(async () => (await engine.run('drift-1')).status === 'sleeping');
    version = 2;
    await expect(run.result()).rejects.toThrow(
      "NonDeterminismError: run drift-1: call 1 is step 'new-name' in the code but step 'old-name' in the journal",
    );
  });

  it('fails a step whose output is over the largest value, naming the step and the limit', async () => {
    const big = workflow('big', async (ctx) => ctx.step('fetch', async () => 'x'.repeat(2000)));
    const made = await testEngine(backend, { workflows: [big], pollMs: 100, maxEventBytes: 1000, maxValueBytes: 1000 });
    close = made.close;
    const run = await made.engine.start(big, {}, { id: 'big-1' });
    await expect(run.result()).rejects.toThrow(
      'TerminalError: step fetch: output: is 2 KiB (2002 bytes), over the limit of 1000 bytes',
    );
  });

  it('times out an attempt through its signal', async () => {
    const stuck = workflow('stuck', async (ctx) =>
      ctx.step('hang', () => new Promise(() => {}), {
        timeout: '50ms',
        retry: { maxAttempts: 2, backoff: { base: '10ms' } },
      }),
    );
    const engine = await engineWith(stuck);
    const run = await engine.start(stuck, {}, { id: 'stuck-1' });
    await expect(run.result()).rejects.toThrow('TimeoutError: step timed out after 50 ms');
    expect((await engine.run('stuck-1')).steps[0]).toMatchObject({ status: 'failed', attempts: 2 });
  });

  it('runs a child with its own journal while the parent waits durably', async () => {
    const square = workflow('square', async (ctx, n: number) => ctx.step('square', async () => n * n));
    const broken = workflow('broken', async (ctx) =>
      ctx.step('boom', async () => {
        throw new TerminalError('child broke');
      }),
    );
    const parent = workflow('parent', async (ctx, n: number) => {
      const [a, b] = await Promise.all([ctx.child(square, n), ctx.child(square, n + 1)]);
      const failure = await ctx.child(broken, null).catch((error: Error) => error.message);
      return { sum: a + b, failure };
    });
    const engine = await engineWith(square, broken, parent);
    const run = await engine.start(parent, 3, { id: 'parent-1' });
    expect(await run.result()).toEqual({ sum: 25, failure: 'child broke' });
    expect(await engine.run('parent-1:square#1')).toMatchObject({ status: 'success', output: 9 });
    expect(await types(engine, 'parent-1:square#2')).toEqual([
      'run.started',
      'step.started',
      'step.completed',
      'run.completed',
    ]);
    expect((await types(engine, 'parent-1')).filter((t) => t.startsWith('child.'))).toEqual(
      expect.arrayContaining([
        'child.started',
        'child.started',
        'child.completed',
        'child.completed',
        'child.started',
        'child.failed',
      ]),
    );
  });

  it('runs the runs of one ordering key one at a time, in start order', async () => {
    const log: string[] = [];
    const turn = workflow('turn', async (ctx, name: string) => {
      await ctx.step('begin', async () => void log.push(`${name}:begin`));
      await ctx.sleep('hold', '50ms');
      await ctx.step('end', async () => void log.push(`${name}:end`));
      return name;
    });
    const engine = await engineWith(turn);
    const runs = [];
    for (const name of ['a', 'b', 'c'])
      runs.push(await engine.start(turn, name, { id: `turn-${name}`, orderingKey: 'customer-1' }));
    const other = await engine.start(turn, 'x', { id: 'turn-x', orderingKey: 'customer-2' });
    expect(await Promise.all([...runs, other].map((r) => r.result()))).toEqual(['a', 'b', 'c', 'x']);
    expect(log.filter((line) => !line.startsWith('x'))).toEqual([
      'a:begin',
      'a:end',
      'b:begin',
      'b:end',
      'c:begin',
      'c:end',
    ]);
    expect((await engine.run('turn-c')).status).toBe('success');
  });

  it('keeps a waiting run of an ordering key waiting when signalled, and lets a cancelled one leave the line', async () => {
    const log: string[] = [];
    const gated = workflow('gated', async (ctx, name: string) => {
      await ctx.step('begin', async () => void log.push(`${name}:begin`));
      const go = await ctx.waitForEvent<string>('go');
      return `${name}:${go}`;
    });
    const engine = await engineWith(gated);
    const a = await engine.start(gated, 'a', { id: 'g-a', orderingKey: 'k' });
    const b = await engine.start(gated, 'b', { id: 'g-b', orderingKey: 'k' });
    const c = await engine.start(gated, 'c', { id: 'g-c', orderingKey: 'k' });
    await eventually(async () => (await engine.run('g-a')).status === 'waiting');
    await engine.signal('g-c', 'go', 'early');
    await engine.cancel('g-b');
    await expect(b.result()).rejects.toThrow(CancelledError);
    expect(log).toEqual(['a:begin']);
    expect((await engine.run('g-c')).status).toBe('pending');
    await engine.signal('g-a', 'go', 'now');
    expect(await a.result()).toBe('a:now');
    expect(await c.result()).toBe('c:early');
    expect(log).toEqual(['a:begin', 'c:begin']);
  });

  it('fails a run that outlives its timeout, firing the running step signal and compensating', async () => {
    const undone: string[] = [];
    let reason: unknown = null;
    const late = workflow('late', async (ctx) => {
      await ctx.step('reserve', async () => 'r', { compensate: async () => void undone.push('released') });
      await ctx.step(
        'hang',
        ({ signal }) =>
          new Promise((_, reject) => signal.addEventListener('abort', () => reject((reason = signal.reason)))),
      );
    });
    const engine = await engineWith(late);
    const run = await engine.start(late, {}, { id: 'late-1', timeout: '1s' });
    await expect(run.result()).rejects.toThrow('TimeoutError: run late-1 timed out');
    expect(String(reason)).toMatch(/timed out/);
    expect(undone).toEqual(['released']);
    await expect(engine.start(late, {}, { id: 'late-2', timeout: 'soon' })).rejects.toThrow(/^timeout: must be/);
  });

  it('wakes a run for a signal that commits while its pass is suspending (no pass queued behind the timer)', async () => {
    const waits = workflow('waits', async (ctx) => {
      await ctx.step('first', async () => 1);
      return ctx.waitForEvent('go', { timeout: '1h' });
    });
    const engine = await engineWith(waits);
    const runs = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const run = await engine.start(waits, {});
        await new Promise((resolve) => setTimeout(resolve, i % 10));
        await engine.signal(run.id, 'go', { i });
        return run;
      }),
    );
    const started = Date.now();
    for (const [i, run] of runs.entries()) expect(await run.result({ pollMs: 50 })).toEqual({ i });
    expect(Date.now() - started).toBeLessThan(10_000);
    // a signal that commits after a pass was claimed but before it read the history queues one more
    // pass, due now, which finds the run ended; one queued behind the 1 h timer would never go
    await eventually(async () => (await engine.queue.list({ queue: RUN_QUEUE, state: 'ready' })).length === 0);
  });
});
