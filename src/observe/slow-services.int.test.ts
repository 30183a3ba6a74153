import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Hono } from 'hono';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import type { Engine } from '../engine.js';
import { startMockServices, type MockServices } from '../mock-services/index.js';
import { createApp } from '../server/app.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { createLogger, logEvents } from './log.js';
import { createMetrics, type Metrics } from './metrics.js';

/** The shipped document pipeline (brief 004 §10), its waits shortened (the mock services run 20× faster). */
function pipeline(name: string, change: (step: any) => void = () => {}): any {
  const definition = JSON.parse(
    readFileSync(new URL('../../examples/document-pipeline.json', import.meta.url), 'utf8'),
  );
  const quick = (step: any) => {
    if (step.retry) step.retry.backoff_seconds = 0.05;
    if (step.type === 'poll')
      Object.assign(step.config, { initial_delay_seconds: 0.02, interval_seconds: 0.05, max_interval_seconds: 0.2 });
    if (step.type === 'parallel') for (const list of Object.values(step.config.branches) as any[]) list.forEach(quick);
    change(step);
  };
  definition.steps.forEach(quick);
  return { ...definition, name };
}

type Line = Record<string, any>;

/**
 * Brief 004 §12: a stored execution against the mock services with faults (a dropped connection,
 * a 500, a 429 with Retry-After, a request timeout, a failed PowerPoint render), then one whose
 * layout never ends (its poll times out), then one cancelled by its user and one by the engine at its
 * timeout_seconds: the metric samples and the log lines (states, poll requests, retries, compensations).
 */
describe.each(backends)('metrics and logs of slow services (brief 004 §12) on $name', (backend) => {
  let mock: MockServices;
  let engine: Engine;
  let app: Hono;
  let metrics: Metrics;
  let lines: Line[];
  let close: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.fetch(
      new Request(`http://api${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const save = async (definition: unknown) => {
    const res = await call('POST', '/workflows', definition);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id as string;
  };
  const execute = async (wid: string, title: string) =>
    (
      await call('POST', `/workflows/${wid}/execute`, {
        trigger_data: { services: mock.url, content: '# A\nB', title },
      })
    ).body.execution_id as string;
  const record = async (wid: string, eid: string) => (await call('GET', `/workflows/${wid}/executions/${eid}`)).body;
  const finished = (wid: string, eid: string) =>
    eventually(async () => {
      const body = await record(wid, eid);
      return ['success', 'partial_success', 'failed', 'cancelled'].includes(body.status) ? body : undefined;
    }, 30_000);
  const states = async (eid: string): Promise<string[]> =>
    (await call('GET', `/runs/${eid}/events?types=state.changed&limit=1000`)).body.events.map((e: any) => e.data.name);
  const logged = (runId: string, msg: string) => lines.filter((l) => l.run_id === runId && l.msg === msg);

  beforeAll(async () => {
    mock = await startMockServices({ speed: 20, seed: 12 });
  });
  afterAll(() => mock.close());
  beforeEach(async () => {
    mock.reset();
    const made = await testEngine(backend, { pollMs: 100 });
    engine = made.engine;
    lines = [];
    const stopLogging = logEvents(
      engine.events,
      createLogger('debug', false, { write: (line: string) => lines.push(JSON.parse(line)) }),
    );
    metrics = createMetrics(engine.events, engine.operator, { processMetrics: false });
    const workflows = storedWorkflows(engine, { secretKey: randomBytes(32), allow: ['127.0.0.1'] });
    app = createApp({ engine, workflows, metrics });
    close = async () => {
      stopLogging();
      metrics.close();
      await made.close();
    };
  });
  afterEach(() => close());

  it('counts a partial render apart from success, retries by error class, timeouts per step and a cancellation; logs every state and poll request', async () => {
    const main = await save(
      pipeline('document-pipeline', (step) => {
        // the layout spec's request gives up after 1 s: one answer comes 3 s late
        if (step.id === 'layout_spec') step.config.timeout_seconds = 1;
      }),
    );
    const short = await save(
      pipeline('document-pipeline-short', (step) => {
        if (step.id === 'layout_wait') step.config.max_wait_seconds = 1;
      }),
    );
    const limited = await save({ ...pipeline('document-pipeline-limited'), timeout_seconds: 1 });

    // 1. every transient fault once, and a PowerPoint render that fails: partial_success
    mock.setFaults([
      { endpoint: 'POST /v1/intake/sessions', drop: true },
      { endpoint: 'POST /v1/layout/proposals', status: 500 },
      { endpoint: 'GET /v1/layout/proposals/{id}/spec', delay_ms: 3000 },
      { endpoint: 'POST /v1/render/documents', status: 429, retry_after: 1 },
      { endpoint: 'POST /v1/render/presentations', job: 'fail', error: 'font missing' },
    ]);
    const partial = await execute(main, 'partial');
    expect(await finished(main, partial)).toMatchObject({ status: 'partial_success', state: 'PARTIAL_COMPLETE' });
    expect(mock.faults()).toEqual([]); // each fault met once

    // 2. a layout that never ends: the poll's maximum wait passes
    mock.setFaults([{ endpoint: 'POST /v1/layout/proposals', job: 'hang', times: 'always' }]);
    const timedOut = await execute(short, 'timed out');
    expect(await finished(short, timedOut)).toMatchObject({ status: 'failed', state: 'FAILED_LAYOUT_GENERATION' });

    // 3. cancelled while the layout is being generated
    const cancelled = await execute(main, 'cancelled');
    await eventually(async () => (await record(main, cancelled)).state === 'LAYOUT_PROCESSING', 30_000);
    expect((await call('POST', `/workflows/${main}/executions/${cancelled}/cancel`, {})).status).toBe(202);
    expect(await finished(main, cancelled)).toMatchObject({ status: 'cancelled' });

    // 4. past its timeout_seconds: the engine cancels it (a system-initiated cancellation, brief 004 §9.1)
    const expired = await execute(limited, 'expired');
    expect(await finished(limited, expired)).toMatchObject({ status: 'cancelled', cancelled_by: 'system' });

    const text = await metrics.text();
    const sample = (name: string, labels: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
      return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
    };
    const finishedRuns = (workflow: string, outcome: string) =>
      sample('runledger_runs_finished_total', `kind="execution",workflow="${workflow}",outcome="${outcome}"`);
    expect(finishedRuns('document-pipeline', 'partial')).toBe(1);
    expect(finishedRuns('document-pipeline', 'success')).toBe(0);
    expect(finishedRuns('document-pipeline', 'cancelled')).toBe(1);
    expect(finishedRuns('document-pipeline-short', 'failed')).toBe(1);
    expect(sample('runledger_runs_cancelled_total', 'kind="execution",workflow="document-pipeline",by="user"')).toBe(1);
    expect(logged(cancelled, 'run:end')).toMatchObject([{ outcome: 'cancelled', cancelled_by: 'user' }]);
    expect(sample('runledger_runs_cancelled_total', 'kind="execution",workflow="document-pipeline",by="system"')).toBe(
      0,
    );
    expect(
      sample('runledger_runs_cancelled_total', 'kind="execution",workflow="document-pipeline-limited",by="system"'),
    ).toBe(1);
    expect(logged(expired, 'run:end')).toMatchObject([{ outcome: 'cancelled', cancelled_by: 'system' }]);
    const retries = (klass: string) =>
      sample('runledger_step_retries_total', `workflow="document-pipeline",class="${klass}"`);
    expect({
      network: retries('network'),
      '5xx': retries('5xx'),
      '429': retries('429'),
      timeout: retries('timeout'),
      other: retries('other'),
    }).toEqual({ network: 1, '5xx': 1, '429': 1, timeout: 1, other: 0 });
    expect(sample('runledger_step_timeouts_total', 'workflow="document-pipeline",step="layout_spec"')).toBe(1);
    expect(sample('runledger_step_timeouts_total', 'workflow="document-pipeline-short",step="layout_wait"')).toBe(1);
    // bounded labels: names, never an execution's or a workflow's id
    for (const id of [main, short, limited, partial, timedOut, cancelled, expired]) expect(text).not.toContain(id);

    // every state transition, in the journal's order, each naming the state it left
    const entered = logged(partial, 'run:state');
    expect(entered.map((l) => l.state)).toEqual(await states(partial));
    expect(entered.at(-1)).toMatchObject({ level: 30, state: 'PARTIAL_COMPLETE', workflow: 'document-pipeline' });
    expect(entered.map((l) => l.from)).toEqual([null, ...entered.slice(0, -1).map((l) => l.state)]);
    expect(logged(timedOut, 'run:state').at(-1)).toMatchObject({ state: 'FAILED_LAYOUT_GENERATION' });

    // each retry with its error class
    const retried = logged(partial, 'step:fail').filter((l) => l.will_retry);
    expect(retried.map((l) => [l.step, l.error_class]).sort()).toEqual([
      ['create_session', 'network'],
      ['layout', '5xx'],
      ['layout_spec', 'timeout'],
      ['render_word', '429'],
    ]);

    // every poll request: its attempt, the status it saw and the wait before the next one
    const polls = logged(partial, 'poll:attempt');
    for (const step of ['normalize', 'layout_wait', 'wait_word', 'wait_powerpoint']) {
      const mine = polls.filter((l) => l.step === step);
      expect(mine.at(-1)?.outcome, step).toMatch(/^(complete|failed)$/);
      expect(mine.map((l) => l.attempt)).toEqual(mine.map((_, i) => i + 1));
      for (const l of mine.slice(0, -1))
        expect(l).toMatchObject({ level: 20, outcome: 'pending', next_delay_ms: expect.any(Number) });
      expect(mine.slice(0, -1).every((l) => l.next_delay_ms > 0)).toBe(true);
    }
    expect(polls.filter((l) => l.step === 'wait_word').at(-1)).toMatchObject({
      level: 30,
      outcome: 'complete',
      status: 'complete',
    });
    expect(polls.filter((l) => l.step === 'wait_powerpoint').at(-1)).toMatchObject({
      level: 30,
      outcome: 'failed',
      status: 'failed',
      error_class: 'other',
    });
    // the layout that never ends: requests seeing it queued or processing (its first request may come before the
    // mock service picked it up), each with its wait, until the maximum wait passed
    const waits = logged(timedOut, 'poll:attempt').filter((l) => l.step === 'layout_wait');
    expect(waits.length).toBeGreaterThanOrEqual(2);
    expect(waits.map((l) => l.attempt)).toEqual(waits.map((_, i) => i + 1));
    for (const l of waits.slice(0, -1))
      expect(l).toMatchObject({
        level: 20,
        outcome: 'pending',
        status: expect.stringMatching(/^(queued|processing)$/),
      });
    expect(waits.slice(0, -1).every((l) => l.next_delay_ms > 0)).toBe(true);
    expect(waits.at(-1)).toMatchObject({
      level: 30,
      outcome: 'timed_out',
      status: expect.stringMatching(/^(queued|processing)$/),
    });
    // every compensation, newest first: the poll's cancel, then the session's delete (kept in a retryable state)
    expect(logged(cancelled, 'compensation:end')).toMatchObject([
      { level: 30, step: 'layout_wait:cancel', cancel: true, outcome: 'completed' },
      { level: 30, step: 'create_session', cancel: false, outcome: 'completed' },
    ]);
    expect(logged(timedOut, 'compensation:end')).toMatchObject([
      { step: 'layout_wait:cancel', outcome: 'completed' },
      { step: 'create_session', outcome: 'skipped', reason: 'kept: FAILED_LAYOUT_GENERATION is retryable' },
    ]);
    expect(logged(partial, 'run:end')).toMatchObject([{ outcome: 'partial', workflow: 'document-pipeline' }]);
  });
});
