import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { backends } from '../src/testing/backends.js';
import { createSqlitePath } from '../src/testing/databases.js';
import { cli, serve } from './child.js';
import { pipelineForTests } from './pipeline.js';
import { pipelineHarness, type PipelineHarness } from './pipeline-harness.js';

const MESSAGES = {
  states: {
    FAILED_RENDERING: 'We could not render {{trigger.title}}. Try again in a few minutes.',
    CANCELLED: 'You cancelled the document.',
  },
  errors: {
    timeout: 'The design service took too long.',
    '5xx': 'The design service is having trouble; we will try again later.',
    '429': 'The design service is busy.',
    network: 'We could not reach the design service.',
    validation: 'Please check the content you sent.',
    other: 'Something went wrong with {{execution.id}}.',
  },
};

/** The layout never finishes: its poll times out whatever the machine's speed. */
const HANG = { endpoint: 'POST /v1/layout/proposals', job: 'hang' as const };

describe.each(backends)('user-facing messages of a definition (brief 004 §13.2) on $name', (backend) => {
  let mock: MockServices;
  let h: PipelineHarness;
  const trigger = () => ({ services: mock.url, content: '# Results\nRevenue grew 12 %.', title: 'Q3 report' });
  const step = (record: any, id: string) => record.steps.find((s: any) => s.step_id === id);

  beforeAll(async () => {
    mock = await startMockServices({ speed: 20, seed: 7 });
  });
  afterAll(() => mock.close());
  beforeEach(async () => {
    mock.reset();
    h = await pipelineHarness(backend, mock);
  });
  afterEach(() => h.close());

  it("an execution ending in FAILED_RENDERING shows the state's sentence, rendered, beside the technical error; each failed step its error class's", async () => {
    mock.setFaults([
      { endpoint: 'POST /v1/render/documents', job: 'fail', error: 'Font not embeddable' },
      { endpoint: 'POST /v1/render/presentations', job: 'fail', error: 'Image asset not found' },
    ]);
    const wid = await h.save({ ...pipelineForTests(), messages: MESSAGES });
    const eid = await h.execute(wid, trigger());
    const failed = await h.finished(wid, eid);
    expect(failed).toMatchObject({
      status: 'failed',
      state: 'FAILED_RENDERING',
      message: 'We could not render Q3 report. Try again in a few minutes.',
    });
    expect(failed.error).toEqual(expect.any(String));
    // the service said the job failed: neither a status nor a timeout, so `other`
    expect(step(failed, 'wait_word')).toMatchObject({ status: 'failed', message: `Something went wrong with ${eid}.` });
    expect(step(failed, 'wait_powerpoint').message).toBe(`Something went wrong with ${eid}.`);
    expect(step(failed, 'layout')).not.toHaveProperty('message');
  });

  it('a poll timing out shows the timeout sentence on the step and, its failure state having none, on the execution', async () => {
    mock.setFaults([HANG]);
    const wid = await h.save({ ...pipelineForTests({ layoutMaxWait: 0.05 }), messages: MESSAGES });
    const eid = await h.execute(wid, trigger());
    const failed = await h.finished(wid, eid);
    expect(failed).toMatchObject({
      status: 'failed',
      state: 'FAILED_LAYOUT_GENERATION',
      message: 'The design service took too long.',
    });
    expect(step(failed, 'layout_wait')).toMatchObject({
      status: 'timed_out',
      message: 'The design service took too long.',
    });
  });

  it('a service answering 503 until the retries are spent shows the 5xx sentence; an HTTP status beats its class', async () => {
    mock.setFaults([{ endpoint: 'POST /v1/layout/proposals', status: 503, times: 'always' }]);
    const wid = await h.save({ ...pipelineForTests(), messages: MESSAGES });
    const eid = await h.execute(wid, trigger());
    const failed = await h.finished(wid, eid);
    expect(failed).toMatchObject({ status: 'failed', message: MESSAGES.errors['5xx'] });
    expect(step(failed, 'layout')).toMatchObject({ status: 'failed', message: MESSAGES.errors['5xx'] });

    const specific = {
      ...MESSAGES,
      errors: { ...MESSAGES.errors, '503': 'The design service is down for maintenance.' },
    };
    const wid2 = await h.save({ ...pipelineForTests(), name: 'document-pipeline-2', messages: specific });
    const again = await h.finished(wid2, await h.execute(wid2, trigger()));
    expect(again.message).toBe('The design service is down for maintenance.');
  });

  it('a service dropping the connection until the retries are spent shows the network sentence', async () => {
    mock.setFaults([{ endpoint: 'POST /v1/layout/proposals', drop: true, times: 'always' }]);
    const wid = await h.save({ ...pipelineForTests(), messages: MESSAGES });
    const failed = await h.finished(wid, await h.execute(wid, trigger()));
    expect(failed).toMatchObject({ status: 'failed', message: MESSAGES.errors.network });
    expect(step(failed, 'layout')).toMatchObject({ status: 'failed', message: MESSAGES.errors.network });
  });

  it('without messages the record says null and the steps carry none', async () => {
    mock.setFaults([HANG]);
    const wid = await h.save(pipelineForTests({ layoutMaxWait: 0.05 }));
    const failed = await h.finished(wid, await h.execute(wid, trigger()));
    expect(failed.message).toBeNull();
    expect(step(failed, 'layout_wait')).not.toHaveProperty('message');
  });

  it('a definition whose messages name an unknown state or error class, a too long sentence, a secret or a missing step is refused 400, naming each', async () => {
    const res = await h.call('POST', '/workflows', {
      ...pipelineForTests(),
      messages: {
        states: { FAILED_RENDERING: 'x'.repeat(501), FAILED_PRINTING: 'We could not print it.' },
        errors: { slow: 'Too slow.', '5xx': 'Key {{secrets.api_key}}.', timeout: 'Took {{steps.nowhere.output}}.' },
      },
    });
    expect(res.status).toBe(400);
    const problems = res.body.error.problems as { path: string; message: string }[];
    expect(problems.map((p) => p.path).sort()).toEqual([
      'messages.errors.5xx',
      'messages.errors.slow',
      'messages.errors.timeout',
      'messages.states.FAILED_PRINTING',
      'messages.states.FAILED_RENDERING',
    ]);
    expect(problems.find((p) => p.path === 'messages.states.FAILED_PRINTING')!.message).toContain('states.names');
    expect(problems.find((p) => p.path === 'messages.states.FAILED_RENDERING')!.message).toContain('500');

    const noStates = await h.call('POST', '/workflows', {
      name: 'plain',
      messages: { states: { DONE: 'Done.' } },
      steps: [{ id: 'a', type: 'log', config: { message: 'hi' } }],
    });
    expect(noStates.status).toBe(400);
    expect(noStates.body.error.problems.map((p: any) => p.path)).toEqual(['messages.states.DONE']);
  });
});

describe('the CLI shows the message beside the error', () => {
  let mock: MockServices;
  beforeAll(async () => {
    mock = await startMockServices({ speed: 20, seed: 7 });
  });
  afterAll(() => mock.close());

  it("runledger run --wait and executions show print the execution's message", async () => {
    mock.setFaults([HANG]);
    const server = await serve(createSqlitePath(), [], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1', RUNLEDGER_POLL_MS: '100' });
    try {
      const file = join(mkdtempSync(join(tmpdir(), 'rl-messages-')), 'pipeline.json');
      writeFileSync(file, JSON.stringify({ ...pipelineForTests({ layoutMaxWait: 0.05 }), messages: MESSAGES }));
      const apply = cli(['workflows', 'apply', file, '--url', server.url]);
      await apply.exited;
      const wid = /created (wf_\S+)/.exec(apply.output())![1]!;
      const data = JSON.stringify({ services: mock.url, content: '# A\nText' });
      const run = cli(['run', wid, '--data', data, '--wait', '--url', server.url]);
      expect((await run.exited).code, run.output()).toBe(1);
      expect(run.output()).toMatch(
        /execution (ex_\S+) failed FAILED_LAYOUT_GENERATION.*\nmessage: The design service took too long\.\n/,
      );
      const eid = /execution (ex_\S+) failed/.exec(run.output())![1]!;
      const show = cli(['executions', 'show', eid, '--url', server.url]);
      expect((await show.exited).code, show.output()).toBe(0);
      expect(show.output()).toContain('\nmessage: The design service took too long.\n');
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });
});
