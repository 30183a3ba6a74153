import { afterEach, describe, expect, it } from 'vitest';
import { TerminalError } from '../errors.js';
import type { Engine } from '../engine.js';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';
import { workflow, type Workflow } from './workflow.js';

describe.each(backends)('nodes (ctx.node) on $name', (backend) => {
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

  it('never enters a completed node again; retries a failed one from its start, re-running only the calls that failed', async () => {
    const counts = { a: 0, inner: 0, once: 0, flaky: 0, c: 0 };
    const nodes = workflow('nodes', async (ctx) => {
      const a = await ctx.node('a', async () => (counts.a++, ctx.step('inner', async () => (counts.inner++, 1))));
      const b = await ctx.node(
        'b',
        async ({ attempt }) => {
          const x = await ctx.step('once', async () => (counts.once++, 10));
          await ctx.step(
            'flaky',
            async () => {
              counts.flaky++;
              if (attempt < 3) throw new Error(`attempt ${attempt} failed`);
            },
            { retry: { maxAttempts: 1 } },
          );
          return a + x;
        },
        { retry: { maxAttempts: 3, backoff: { base: '50ms', factor: 2 } }, input: { a } },
      );
      // a later pass (after the timer) replays from the top: nodes a and b return what they saved
      await ctx.sleep('nap', '100ms');
      const c = await ctx.node('c', async () => (counts.c++, 'ran'), { skip: true });
      return { a, b, c };
    });
    const engine = await engineWith(nodes);
    const run = await engine.start(nodes, {}, { id: 'nodes-1' });
    expect(await run.result()).toEqual({ a: 1, b: 11, c: null });
    expect(counts).toEqual({ a: 1, inner: 1, once: 1, flaky: 3, c: 0 });
    const events = (await engine.journal.readStream('run:nodes-1')).filter((e) => e.type.startsWith('node.'));
    expect(
      events.map((e) => [e.type, (e.data as { name: string }).name, (e.data as { attempt: number }).attempt]),
    ).toEqual([
      ['node.started', 'a', 1],
      ['node.completed', 'a', 1],
      ['node.started', 'b', 1],
      ['node.failed', 'b', 1],
      ['node.started', 'b', 2],
      ['node.failed', 'b', 2],
      ['node.started', 'b', 3],
      ['node.completed', 'b', 3],
      ['node.completed', 'c', 0],
    ]);
    const failed = events
      .filter((e) => e.type === 'node.failed')
      .map((e) => e.data as { retryAt: number; error: string });
    expect(failed.map((f) => f.error)).toEqual(['Error: attempt 1 failed', 'Error: attempt 2 failed']);
    expect(failed.every((f) => typeof f.retryAt === 'number')).toBe(true);
    expect(events[2]!.data).toMatchObject({ input: { a: 1 } });
    expect(events.at(-1)!.data).toMatchObject({ skipped: true, output: null });
  });

  it('fails a node for good on a TerminalError, without a retry: entered once, its error caught by the code, also on replay', async () => {
    let entered = 0;
    const doomed = workflow('doomed', async (ctx) => {
      try {
        await ctx.node('n', async () => {
          entered++;
          throw new TerminalError('no way');
        });
      } catch (error) {
        await ctx.sleep('after', '50ms');
        return `caught ${(error as Error).name}: ${(error as Error).message}`;
      }
      return 'unreachable';
    });
    const engine = await engineWith(doomed);
    expect(await (await engine.start(doomed, {}, { id: 'doomed-1' })).result()).toBe('caught TerminalError: no way');
    expect(entered).toBe(1);
    const failed = (await engine.journal.readStream('run:doomed-1')).filter((e) => e.type === 'node.failed');
    expect(failed.map((e) => (e.data as { retryAt: unknown }).retryAt)).toEqual([null]);
  });
});
