import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../../app/workflows.js';
import type { Engine } from '../../engine.js';
import { ValidationError } from '../../errors.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import type { WorkflowService } from '../service.js';

/** A stored poll step taking a named rate limit before each request, checked at save time. */
describe.each(backends)('rate_limit on a stored poll step on $name', (backend) => {
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

  const poll = (rate_limit: unknown) => ({
    id: 'check',
    type: 'poll',
    config: { url: 'http://127.0.0.1:9/never', until: { path: 'body.done', equals: true } },
    rate_limit,
  });

  it("holds a poll's request at its rate limit, waiting with the limit's reason, no request sent", async () => {
    await engine.limits.define({ name: 'poll-api', limit: 1, period: '1h' });
    await engine.store.rateTake({ uses: [{ name: 'poll-api', key: '', units: 1 }] });
    const wf = await service.definitions.create({ name: 'rated-poll', steps: [poll({ name: 'poll-api' })] });
    const { execution_id } = await service.executions.execute(wf.id, {});
    const waiting = await eventually(async () => {
      const view = await engine.runs.find(execution_id);
      return view?.status === 'waiting' && view;
    });
    expect(waiting.waitingFor).toMatch(/^rate limit poll-api — next slot/);
    // the request was never sent: the poll journaled its start and its wait for room, no attempt
    const types = (await engine.journal.readStream(`run:${execution_id}`)).map((e) => e.type);
    expect(types).toContain('step.rate_waiting');
    expect(types).not.toContain('poll.attempted');
  });

  it('refuses at save time a poll naming a rate limit that does not exist, or a charge', async () => {
    const unknown = service.definitions.create({ name: 'unknown-poll-limit', steps: [poll({ name: 'nope' })] });
    await expect(unknown).rejects.toBeInstanceOf(ValidationError);
    await expect(unknown).rejects.toThrow("steps[0].rate_limit.name: no rate limit named 'nope'");
    await engine.limits.define({ name: 'poll-x', limit: 1, period: '1s' });
    const charged = service.definitions.create({
      name: 'charged-poll',
      steps: [poll({ name: 'poll-x', charge: 'output.body.used' })],
    });
    await expect(charged).rejects.toThrow(/steps\[0\]\.rate_limit.*charge/);
  });
});
