import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { StepTimedOutError, TerminalError } from '../errors.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { checkCrashRecovery } from '../testing/replay.js';
import { partialSuccess, workflow, type Workflow } from './workflow.js';

const quick = { initialDelay: '10ms', interval: '20ms', factor: 1.5, maxInterval: '50ms' };

describe.each(backends)('poll, parallel, states on $name', (backend) => {
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
  const events = async (engine: Engine, id: string) => engine.journal.readStream(`run:${id}`);

  it('polls with durable waits until the condition holds, journaling each request and its timer', async () => {
    let polls = 0;
    const job = workflow('job', async (ctx) =>
      ctx.poll('status', async () => ({ status: ++polls < 3 ? 'processing' : 'complete', n: polls }), {
        ...quick,
        until: (a) => a.status === 'complete',
        maxWait: '10s',
        label: 'Waiting for the job…',
      }),
    );
    const engine = await engineWith(job);
    const run = await engine.start(job, {}, { id: 'poll-1' });
    expect(await run.result()).toEqual({ status: 'complete', n: 3 });
    const journal = await events(engine, 'poll-1');
    const polled = journal.filter((e) => e.type.startsWith('poll.'));
    expect(polled.map((e) => e.type)).toEqual(['poll.started', 'poll.attempted', 'poll.attempted', 'poll.completed']);
    const [started, first, second] = polled.map((e) => e.data as { nextAt: number });
    // each wait is its own pass: the request came at or after the journaled time, never before
    expect(polled[1]!.timestamp).toBeGreaterThanOrEqual(started!.nextAt);
    expect(polled[2]!.timestamp).toBeGreaterThanOrEqual(first!.nextAt);
    expect(polled[3]!.timestamp).toBeGreaterThanOrEqual(second!.nextAt);
    // the second wait is 1.5 times the first (the schedule itself: poll.test.ts)
    expect(second!.nextAt - first!.nextAt).toBeGreaterThanOrEqual(30);
    expect(polls).toBe(3);
    const view = await engine.run('poll-1');
    expect(view.steps[0]).toMatchObject({
      name: 'status',
      kind: 'poll',
      status: 'success',
      attempts: 3,
      label: 'Waiting for the job…',
    });
  });

  it('ends a poll whose maximum wait passed with a StepTimedOutError the code can route on, and calls its cancel', async () => {
    const cancels: string[] = [];
    const slow = workflow('slow', async (ctx) => {
      try {
        await ctx.poll('layout', async () => ({ status: 'processing' }), {
          ...quick,
          until: (a) => a.status === 'complete',
          maxWait: '120ms',
          cancel: async ({ idempotencyKey }) => void cancels.push(idempotencyKey),
        });
        return 'done';
      } catch (error) {
        if (!(error instanceof StepTimedOutError)) throw error;
        await ctx.setState('FAILED_LAYOUT_GENERATION');
        throw new TerminalError('layout timed out');
      }
    });
    const engine = await engineWith(slow);
    const run = await engine.start(slow, {}, { id: 'slow-1' });
    await expect(run.result()).rejects.toThrow('layout timed out');
    const view = await engine.run('slow-1');
    expect(view).toMatchObject({
      status: 'failed',
      state: 'FAILED_LAYOUT_GENERATION',
      compensations: { ran: 1, failed: 0 },
    });
    expect(view.steps[0]).toMatchObject({ kind: 'poll', status: 'timed_out' });
    expect(cancels).toEqual(['slow-1:layout:cancel#1:compensate']);
    const journal = await events(engine, 'slow-1');
    const timedOut = journal.find((e) => e.type === 'poll.timed_out')!;
    const started = journal.find((e) => e.type === 'poll.started')!.data as { deadline: number };
    expect(timedOut.timestamp).toBeGreaterThanOrEqual(started.deadline);
  });

  it('retries transient errors while polling by the retry policy, and fails at once on failWhen', async () => {
    let calls = 0;
    const flaky = workflow('flaky', async (ctx) =>
      ctx.poll(
        'status',
        async () => {
          calls += 1;
          if (calls <= 2) throw new Error('503 Service Unavailable');
          return { status: calls < 4 ? 'processing' : 'failed', error: 'Image asset not found' };
        },
        {
          ...quick,
          until: (a) => a.status === 'complete',
          failWhen: (a) => a.status === 'failed' && `job failed: ${a.error}`,
          retry: { maxAttempts: 3, backoff: { base: '10ms' } },
        },
      ),
    );
    const engine = await engineWith(flaky);
    const run = await engine.start(flaky, {}, { id: 'flaky-1' });
    await expect(run.result()).rejects.toThrow('poll status failed: job failed: Image asset not found');
    expect(calls).toBe(4);
    const types = (await events(engine, 'flaky-1')).map((e) => e.type).filter((t) => t.startsWith('poll.'));
    expect(types).toEqual(['poll.started', 'poll.attempted', 'poll.attempted', 'poll.attempted', 'poll.failed']);
  });

  it('cancels a waiting poll: its cancel runs once, newest first before older compensations', async () => {
    const order: string[] = [];
    const pipeline = workflow('pipeline', async (ctx) => {
      await ctx.step('create', async () => 'sess-1', { compensate: async () => void order.push('delete session') });
      return ctx.poll('render', async () => ({ status: 'processing' }), {
        initialDelay: '10ms',
        interval: '1h',
        until: () => false,
        maxWait: '2h',
        cancel: async () => void order.push('cancel render'),
      });
    });
    const engine = await engineWith(pipeline);
    await engine.start(pipeline, {}, { id: 'cancel-1' });
    await eventually(async () => (await events(engine, 'cancel-1')).some((e) => e.type === 'poll.attempted'));
    await engine.cancel('cancel-1');
    await eventually(async () => (await engine.run('cancel-1')).status === 'cancelled');
    expect(order).toEqual(['cancel render', 'delete session']);
    expect((await engine.run('cancel-1')).compensations).toEqual({ ran: 2, failed: 0 });
  });

  it('runs parallel branches to their ends, each numbered on its own, and ends partial_success', async () => {
    const ran: string[] = [];
    const render = workflow('render', async (ctx) => {
      const results = await ctx.parallel('render', {
        word: async (c) => {
          const job = await c.step('submit', async () => (ran.push('word'), 'job-w'));
          await c.sleep('settle', '15ms');
          return c.step('fetch', async () => `${job}:done`);
        },
        ppt: async (c) => {
          await c.step('submit', async () => (ran.push('ppt'), 'job-p'));
          return c.step('fetch', async () => {
            throw new TerminalError('Image asset not found');
          });
        },
      });
      const failed = Object.values(results).some((r) => r.status === 'failed');
      const summary = {
        word: results.word.status,
        ppt: results.ppt.status,
        out: results.word.status === 'success' ? results.word.output : null,
      };
      if (failed) {
        await ctx.setState('PARTIAL_COMPLETE');
        return partialSuccess(summary);
      }
      return summary;
    });
    const engine = await engineWith(render);
    const run = await engine.start(render, {}, { id: 'par-1' });
    expect(await run.result()).toEqual({ word: 'success', ppt: 'failed', out: 'job-w:done' });
    const view = await engine.run('par-1');
    expect(view).toMatchObject({ status: 'partial_success', state: 'PARTIAL_COMPLETE' });
    expect(view.steps.map((s) => `${s.seq} ${s.name} ${s.status}`)).toEqual([
      '1.ppt.1 submit success',
      '1.ppt.2 fetch failed',
      '1.word.1 submit success',
      '1.word.3 fetch success',
    ]);
    expect(ran.sort()).toEqual(['ppt', 'word']);
  });
});

describe('replay of the new calls after a crash at every write', () => {
  it('poll, parallel branches with chains of calls, and states replay to the same output', async () => {
    let n = 0;
    const wf = workflow('orchestrate', async (ctx) => {
      await ctx.setState('SUBMITTED');
      const results = await ctx.parallel('render', {
        a: async (c) => {
          const x = await c.step('one', async () => 1);
          await c.sleep('pause', '5ms');
          return x + (await c.step('two', async () => 2));
        },
        b: async (c) => {
          const y = await c.poll('status', async () => ({ done: ++n % 2 === 0 }), {
            initialDelay: '1ms',
            interval: '2ms',
            until: (a) => a.done,
            maxWait: '5s',
          });
          return (await c.step('three', async () => 3)) + (y.done ? 10 : 0);
        },
      });
      await ctx.setState('DONE');
      return {
        a: results.a.status === 'success' ? results.a.output : null,
        b: results.b.status === 'success' ? results.b.output : null,
      };
    });
    const report = await checkCrashRecovery(wf, {});
    expect(report.output).toEqual({ a: 3, b: 13 });
  });
});
