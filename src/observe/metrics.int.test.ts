import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { TerminalError } from '../errors.js';
import { workflow } from '../runtime/workflow.js';
import { createApp } from '../server/app.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';
import { createMetrics } from './metrics.js';

const FAMILIES = [
  'runledger_runs_started_total',
  'runledger_runs_finished_total',
  'runledger_run_duration_seconds',
  'runledger_step_duration_seconds',
  'runledger_step_attempts',
  'runledger_tasks_claimed_total',
  'runledger_task_retries_total',
  'runledger_tasks_dead_total',
  'runledger_queue_tasks',
  'runledger_queue_oldest_ready_age_seconds',
  'runledger_subscription_lag_positions',
  'runledger_subscription_parked_events',
  'runledger_http_request_duration_seconds',
  'runledger_store_transaction_duration_seconds',
  'runledger_store_batch_writes',
  'runledger_store_batch_events',
  'process_cpu_user_seconds_total',
  'nodejs_heap_size_used_bytes',
];

describe.each(backends)('GET /metrics on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });

  it('shows every family behind the API token, with no label holding a run id or a raw path', async () => {
    const made = await testEngine(backend, { pollMs: 100 });
    const { engine } = made;
    const metrics = createMetrics(engine.events, engine.operator);
    close = async () => {
      metrics.close();
      await made.close();
    };
    let tries = 0;
    const hello = workflow('hello', async (ctx, input: { n: number }) => {
      await ctx.step(
        'flaky',
        async () => {
          if (input.n === 0 && ++tries === 1) throw new Error('once');
          return input.n;
        },
        { retry: { maxAttempts: 2, backoff: { base: '10ms', factor: 1, max: '10ms' } } },
      );
    });
    engine.register(hello);
    const workflows = storedWorkflows(engine, { secretKey: randomBytes(32) });
    const app = createApp({ engine, workflows, metrics, token: 'sesame' });
    const auth = { authorization: 'Bearer sesame' };
    engine.work('mail', async () => {
      throw new TerminalError('bounced');
    });
    await engine.subscribe('audit', { streamPrefix: 'order:', maxAttempts: 1 }, async () => {
      throw new Error('no');
    });

    const ids = Array.from({ length: 50 }, (_, n) => `run-${n}-${randomBytes(6).toString('hex')}`);
    const handles = await Promise.all(ids.map((id, n) => engine.start(hello, { n }, { id })));
    await Promise.all(handles.map((h) => h.result()));
    const wf = await app.fetch(
      new Request('http://api/workflows', {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'wf', steps: [{ id: 'a', type: 'transform', config: { mapping: { x: 1 } } }] }),
      }),
    );
    const { id: workflowId } = (await wf.json()) as { id: string };
    const ex = await app.fetch(
      new Request(`http://api/workflows/${workflowId}/execute`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: '{}',
      }),
    );
    const { execution_id } = (await ex.json()) as { execution_id: string };
    let bounces = 0;
    engine.work(
      'retry',
      async () => {
        if (++bounces === 1) throw new Error('once');
      },
      { backoff: { baseMs: 10, factor: 1, maxMs: 10, jitter: 0 } },
    );
    const { task: retried } = await engine.queue.enqueue('retry', {});
    await engine.queue.enqueue('mail', {});
    await engine.queue.enqueue('later', {}, { runAt: Date.now() - 3000 });
    await engine.journal.append('order:1', [{ type: 'placed', data: {} }]);
    await eventually(async () => (await engine.run(execution_id)).status === 'success');
    await eventually(
      async () =>
        (await engine.queue.dead({ queue: 'mail' })).length === 1 && (await engine.parked('audit')).length === 1,
    );
    await eventually(async () => (await engine.queue.get(retried.id)).state === 'completed');
    await app.fetch(new Request(`http://api/workflows/${workflowId}/executions/${execution_id}`, { headers: auth }));

    expect((await app.fetch(new Request('http://api/metrics'))).status).toBe(401);
    const res = await app.fetch(new Request('http://api/metrics', { headers: auth }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    for (const family of FAMILIES) expect(text, family).toContain(`\n${family}`);
    expect(text).toContain('runledger_runs_started_total{kind="code",workflow="hello"} 50');
    expect(text).toContain('runledger_runs_finished_total{kind="code",workflow="hello",outcome="success"} 50');
    expect(text).toContain(
      // an execution is known by its stored workflow's name, not the interpreter's (runledger.stored)
      'runledger_runs_finished_total{kind="execution",workflow="wf",outcome="success"} 1',
    );
    expect(text).toContain('runledger_task_retries_total{queue="retry"} 1');
    expect(text).toContain('runledger_tasks_dead_total{queue="mail"} 1');
    expect(text).toMatch(/runledger_queue_tasks\{queue="later",state="ready"\} 1/);
    expect(
      Number(/runledger_queue_oldest_ready_age_seconds\{queue="later"\} ([\d.]+)/.exec(text)?.[1]),
    ).toBeGreaterThanOrEqual(2);
    expect(text).toContain('runledger_subscription_parked_events{subscription="audit"} 1');
    expect(text).toContain('route="/workflows/{id}/executions/{execution_id}"');
    // every run's pass wrote through a group commit: at least one write each, its end among them
    const sample = (name: string) => Number(new RegExp(`\\n${name} (\\d+)`).exec(text)?.[1]);
    expect(sample('runledger_store_batch_writes_sum')).toBeGreaterThanOrEqual(50);
    expect(sample('runledger_store_batch_writes_count')).toBeGreaterThan(0);
    expect(sample('runledger_store_batch_events_sum')).toBeGreaterThanOrEqual(50 * 2);
    // bounded labels: no run id, execution id or workflow id, and no raw path
    for (const id of [...ids, execution_id, workflowId]) expect(text).not.toContain(id);
    const labelValues = new Set([...text.matchAll(/="([^"]*)"/g)].map((m) => m[1]!));
    expect(labelValues.size).toBeLessThan(150);
  });
});
