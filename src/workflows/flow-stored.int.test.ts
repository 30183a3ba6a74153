import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import type { Engine } from '../engine.js';
import { ValidationError } from '../errors.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import type { WorkflowService } from './service.js';

const say = [{ id: 'say', type: 'log', config: { message: 'n={{trigger.n}}' } }];

describe.each(backends)('stored workflows under debounce and rate limits on $name', (backend) => {
  let engine: Engine;
  let service: WorkflowService;
  let close: () => Promise<void>;

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 50 });
    engine = t.engine;
    service = storedWorkflows(engine, { secretKey: randomBytes(32), allow: ['127.0.0.1'] });
    close = t.close;
  });
  afterEach(() => close());

  it("joins a key's executions within the debounce period into one, with the last trigger data", async () => {
    const wf = await service.definitions.create({
      name: 'chat-reply',
      debounce: { key: 'trigger.chat', period: '1s', max_wait: '20s' },
      steps: say,
    });
    const started = [];
    for (const n of [1, 2, 3])
      started.push(await service.executions.execute(wf.id, { trigger_data: { chat: 'a', n } }));
    const other = await service.executions.execute(wf.id, { trigger_data: { chat: 'b', n: 9 } });
    const ids = new Set(started.map((s) => s.execution_id));
    expect(ids.size).toBe(1);
    expect(other.execution_id).not.toBe(started[0]!.execution_id);
    const id = started[0]!.execution_id;
    const done = await eventually(async () => {
      const record = await service.executions.get(wf.id, id);
      return record.status === 'success' && record;
    });
    expect(done.trigger_data).toMatchObject({ chat: 'a', n: 3 });
    // a rerun is a start of its own, joining no window
    const rerun = await service.executions.rerun(wf.id, id);
    expect(rerun.execution_id).toMatch(/^ex_/);
    await eventually(async () => (await service.executions.get(wf.id, rerun.execution_id)).status === 'success');
    // one row per execution in the workflow's list: the window's three starts are one
    expect((await service.executions.list(wf.id)).executions.map((e) => e.execution_id).sort()).toEqual(
      [id, other.execution_id, rerun.execution_id].sort(),
    );
  });

  it('joins keyed starts (a trigger rule, an Idempotency-Key) into the window too, each key answering it', async () => {
    const wf = await service.definitions.create({
      name: 'chat-keyed',
      debounce: { key: 'trigger.chat', period: '1s' },
      steps: say,
    });
    const first = await engine.store.transaction((tx) =>
      service.executions.startIn(tx, wf.id, { trigger_data: { chat: 'a', n: 1 } }, 'event-1'),
    );
    const second = await service.executions.execute(wf.id, {
      trigger_data: { chat: 'a', n: 2 },
      idempotencyKey: 'request-2',
    });
    expect(second.execution_id).toBe(first.execution_id);
    // the same key again is the same execution, adding nothing to the window
    const again = await service.executions.execute(wf.id, {
      trigger_data: { chat: 'a', n: 3 },
      idempotencyKey: 'request-2',
    });
    expect(again).toMatchObject({ execution_id: first.execution_id, duplicate: true });
    const done = await eventually(async () => {
      const record = await service.executions.get(wf.id, first.execution_id);
      return record.status === 'success' && record;
    });
    expect(done.trigger_data).toMatchObject({ n: 2 });
  });

  it("fails an execution past its definition's budget of steps, naming the budget", async () => {
    const wf = await service.definitions.create({
      name: 'capped',
      budget: { steps: 1 },
      steps: [...say, { id: 'again', type: 'log', config: { message: 'again' } }],
    });
    const { execution_id } = await service.executions.execute(wf.id, { trigger_data: { n: 1 } });
    const failed = await eventually(async () => {
      const record = await service.executions.get(wf.id, execution_id);
      return record.status === 'failed' && record;
    });
    expect(failed.error).toBe('BudgetExceededError: budget: 2 of 1 steps');
    expect(failed.steps.map((s) => [s.step_id, s.status])).toEqual([
      ['say', 'success'],
      ['again', 'skipped'],
    ]);
  });

  it("holds an http_request step at its rate limit, waiting with the limit's reason", async () => {
    await engine.limits.define({ name: 'stored-api', limit: 1, period: '1h' });
    await engine.store.rateTake({ uses: [{ name: 'stored-api', key: '', units: 1 }] });
    const wf = await service.definitions.create({
      name: 'rated',
      steps: [
        {
          id: 'call',
          type: 'http_request',
          config: { url: 'http://127.0.0.1:9/never' },
          rate_limit: { name: 'stored-api' },
        },
      ],
    });
    const { execution_id } = await service.executions.execute(wf.id, {});
    const waiting = await eventually(async () => {
      const view = await engine.runs.find(execution_id);
      return view?.status === 'waiting' && view;
    });
    expect(waiting.waitingFor).toMatch(/^rate limit stored-api — next slot/);
  });

  it('refuses at save time a step naming a rate limit that does not exist', async () => {
    const save = service.definitions.create({
      name: 'unknown-limit',
      steps: [{ id: 'call', type: 'http_request', config: { url: 'https://x.example' }, rate_limit: { name: 'nope' } }],
    });
    await expect(save).rejects.toBeInstanceOf(ValidationError);
    await expect(save).rejects.toThrow("steps[0].rate_limit.name: no rate limit named 'nope'");
  });

  it("charges what an http_request step's answer says it used (charge), past the unit it took", async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ usage: { total_tokens: 40 } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      await engine.limits.define({ name: 'stored-tokens', limit: 100, period: '1h' });
      const wf = await service.definitions.create({
        name: 'charged',
        steps: [
          {
            id: 'model',
            type: 'http_request',
            config: { url: `http://127.0.0.1:${port}/v1/answer` },
            rate_limit: { name: 'stored-tokens', units: 1, charge: 'output.body.usage.total_tokens' },
          },
        ],
      });
      const { execution_id } = await service.executions.execute(wf.id, {});
      await eventually(async () => (await service.executions.get(wf.id, execution_id)).status === 'success');
      const charged = (await engine.journal.readStream(`run:${execution_id}`)).find(
        (e) => e.type === 'step.rate_charged',
      );
      expect(charged?.data).toMatchObject({ charged: [{ name: 'stored-tokens', units: 39 }] });
      // 40 of 100 used: 60 more fit, the 61st does not
      expect(await engine.store.rateTake({ uses: [{ name: 'stored-tokens', key: '', units: 60 }] })).toEqual({
        ok: true,
      });
      expect(await engine.store.rateTake({ uses: [{ name: 'stored-tokens', key: '', units: 1 }] })).toMatchObject({
        ok: false,
      });
    } finally {
      server.close();
    }
  });

  it('holds a wait_for_callback request and a function step at their rate limits', async () => {
    await engine.limits.define({ name: 'stored-calls', limit: 1, period: '1h' });
    await engine.store.rateTake({ uses: [{ name: 'stored-calls', key: '', units: 1 }] });
    const steps = [
      {
        id: 'ask',
        type: 'wait_for_callback',
        timeout_seconds: 60,
        config: { request: { url: 'http://127.0.0.1:9/never' } },
        rate_limit: { name: 'stored-calls' },
      },
      { id: 'fn', type: 'function', config: { function: 'summarize' }, rate_limit: [{ name: 'stored-calls' }] },
    ];
    for (const [i, step] of steps.entries()) {
      const wf = await service.definitions.create({ name: `rated-${i}`, steps: [step] });
      const { execution_id } = await service.executions.execute(wf.id, {});
      const waiting = await eventually(async () => {
        const view = await engine.runs.find(execution_id);
        return view?.status === 'waiting' && view;
      });
      expect(waiting.waitingFor).toMatch(/^rate limit stored-calls — next slot/);
    }
  });

  it("refuses at save time a charge that is not a field of the step's output, and a function step's charge", async () => {
    await engine.limits.define({ name: 'stored-x', limit: 1, period: '1h' });
    const bad = service.definitions.create({
      name: 'bad-charge',
      steps: [
        {
          id: 'call',
          type: 'http_request',
          config: { url: 'https://x.example' },
          rate_limit: { name: 'stored-x', charge: 'usage.tokens' },
        },
      ],
    });
    await expect(bad).rejects.toBeInstanceOf(ValidationError);
    await expect(bad).rejects.toThrow("steps[0].rate_limit.charge: must name a field of the step's output");
    const fn = service.definitions.create({
      name: 'fn-charge',
      steps: [
        {
          id: 'fn',
          type: 'function',
          config: { function: 'f' },
          rate_limit: { name: 'stored-x', charge: 'output.tokens' },
        },
      ],
    });
    await expect(fn).rejects.toBeInstanceOf(ValidationError);
    await expect(fn).rejects.toThrow(/steps\[0\]\.rate_limit.*charge/);
  });
});
