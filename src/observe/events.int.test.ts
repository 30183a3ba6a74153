import { afterEach, describe, expect, it } from 'vitest';
import { TerminalError } from '../errors.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { ENGINE_EVENTS, EngineEvents, type EngineEventMap, type EngineEventName } from './events.js';

describe('the event emitter', () => {
  it('calls listeners of one name, stops after unsubscribe, and survives a listener that throws', () => {
    const events = new EngineEvents();
    const seen: string[] = [];
    events.on('task:dead', () => {
      throw new Error('a broken observer');
    });
    const off = events.on('task:dead', ({ taskId }) => seen.push(taskId));
    expect(events.has('task:claim')).toBe(false);
    events.emit('task:dead', { queue: 'q', taskId: 't1', attempt: 1, error: 'x' });
    off();
    events.emit('task:dead', { queue: 'q', taskId: 't2', attempt: 1, error: 'x' });
    expect(seen).toEqual(['t1']);
  });
});

describe.each(backends)('engine events on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });

  it('reports runs, steps, tasks, dead letters and parked events', async () => {
    let tries = 0;
    const flaky = workflow('flaky', async (ctx) => {
      await ctx.step(
        'wobbly',
        async () => {
          if (++tries === 1) throw new Error('first try fails');
          return 'ok';
        },
        { retry: { maxAttempts: 3, backoff: { base: '10ms', factor: 1, max: '10ms' } } },
      );
      await ctx.step('doomed', async () => {
        throw new TerminalError('no');
      });
    });
    const made = await testEngine(backend, { pollMs: 100 });
    close = made.close;
    const { engine } = made;
    const seen: Array<{ name: EngineEventName; payload: EngineEventMap[EngineEventName] }> = [];
    for (const name of ENGINE_EVENTS) engine.on(name, (payload) => seen.push({ name, payload }));
    engine.register(flaky);
    engine.work('mail', async () => {
      throw new TerminalError('bounced');
    });
    await engine.subscribe('picky', { streamPrefix: 'order:', maxAttempts: 1 }, async () => {
      throw new Error('cannot handle');
    });
    const run = await engine.start(flaky, {}, { id: 'flaky-1' });
    await expect(run.result()).rejects.toThrow('no');
    const { task } = await engine.queue.enqueue('mail', { to: 'a@b.c' });
    await engine.journal.append('order:1', [{ type: 'order.placed', data: {} }]);
    await eventually(
      () => seen.some((e) => e.name === 'task:dead') && seen.some((e) => e.name === 'subscription:parked'),
    );
    const of = <K extends EngineEventName>(name: K) =>
      seen.filter((e) => e.name === name).map((e) => e.payload as EngineEventMap[K]);

    expect(of('run:start')).toEqual([{ runId: 'flaky-1', workflow: 'flaky', kind: 'code' }]);
    expect(of('run:end')).toEqual([
      expect.objectContaining({ runId: 'flaky-1', workflow: 'flaky', kind: 'code', outcome: 'failed' }),
    ]);
    expect(of('step:fail').map((e) => [e.step, e.attempt, e.willRetry])).toEqual([
      ['wobbly', 1, true],
      ['doomed', 1, false],
    ]);
    expect(of('step:complete').map((e) => [e.step, e.attempt])).toEqual([['wobbly', 2]]);
    expect(of('task:claim').some((e) => e.taskId === task.id && e.queue === 'mail')).toBe(true);
    expect(of('task:dead')).toEqual([
      expect.objectContaining({ queue: 'mail', taskId: task.id, error: expect.stringContaining('bounced') }),
    ]);
    expect(of('subscription:parked')).toEqual([
      expect.objectContaining({ subscription: 'picky', error: expect.stringContaining('cannot handle') }),
    ]);
    expect(of('store:transaction').length).toBeGreaterThan(0);
    expect(of('run:pass').length).toBeGreaterThanOrEqual(2);
  });
});
