import { afterEach, describe, expect, it, vi } from 'vitest';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { recordedHistory, replayHistories } from './replay.js';
import { workflow } from './workflow.js';

/* A replay given up on (the code awaits something outside ctx) leaves no timer behind: not the run's deadline either. */

const deployed = workflow('hang', { version: '1' }, async (ctx) => {
  await ctx.step('reserve', async () => 'r-1');
  await ctx.sleep('hold', '1h');
});

/** The new code awaits a promise that never settles where the history has its sleep: the replay is given up on. */
const hanging = workflow('hang', { version: '2' }, async (ctx) => {
  await ctx.step('reserve', async () => 'r-1');
  await new Promise(() => {});
});

afterEach(() => void vi.useRealTimers());

describe.each(backends)('a replay given up on, on $name', (backend) => {
  it('reports it and leaves no timer running (the run has a deadline a day away)', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [deployed] });
    let history: Awaited<ReturnType<typeof recordedHistory>>;
    try {
      await engine.start(deployed, {}, { id: 'held', timeout: '1d' });
      await eventually(async () => (await engine.runs.view('held')).status === 'sleeping');
      history = await recordedHistory(engine, 'held');
    } finally {
      await close();
    }
    // the engine is closed: every timer from here on is the replay's
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const replayed = replayHistories([history], [hanging]);
    await vi.advanceTimersByTimeAsync(10_000);
    const [result] = await replayed;
    expect(result).toEqual({
      runId: 'held',
      workflow: 'hang',
      replays: false,
      divergence: 'the code neither ended nor made its next call within 10 s (does it await something outside ctx?)',
    });
    expect(vi.getTimerCount()).toBe(0);
  }, 30_000);
});
