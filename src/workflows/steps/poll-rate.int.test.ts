import { randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../../app/workflows.js';
import type { Engine } from '../../engine.js';
import { ValidationError } from '../../errors.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import type { WorkflowService } from '../service.js';

/** A stored poll step taking a named rate limit before each request (a charge after it), checked at save time. */
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

  const poll = (rate_limit: unknown, url = 'http://127.0.0.1:9/never') => ({
    id: 'check',
    type: 'poll',
    config: { url, until: { path: 'body.done', equals: true }, initial_delay_seconds: 0 },
    rate_limit,
  });
  /** A service on loopback answering each request with `answer`; its URL. */
  const serve = async (answer: (res: ServerResponse) => void): Promise<string> => {
    const server = createServer((_req, res) => answer(res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const stop = close;
    close = async () => {
      server.close();
      await stop();
    };
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/status`;
  };
  const take = (name: string, units: number) => engine.store.rateTake({ uses: [{ name, key: '', units }] });

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

  it("charges what each request's answer says it used (charge), past the unit it took", async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ done: true, usage: { units: 7 } }));
    });
    await engine.limits.define({ name: 'poll-tokens', limit: 10, period: '1h' });
    const steps = [poll({ name: 'poll-tokens', units: 1, charge: 'output.body.usage.units' }, url)];
    const wf = await service.definitions.create({ name: 'charged-poll', steps });
    const { execution_id } = await service.executions.execute(wf.id, {});
    await eventually(async () => (await service.executions.get(wf.id, execution_id)).status === 'success');
    const charged = (await engine.journal.readStream(`run:${execution_id}`)).find(
      (e) => e.type === 'step.rate_charged',
    );
    expect(charged?.data).toMatchObject({ charged: [{ name: 'poll-tokens', units: 6 }] });
    // 7 of 10 used: 4 more do not fit, 3 do
    expect(await take('poll-tokens', 4)).toMatchObject({ ok: false });
    expect(await take('poll-tokens', 3)).toEqual({ ok: true });
  });

  it("pushes the limit's next slot when the service answers 429 with Retry-After", async () => {
    const url = await serve((res) => {
      res.writeHead(429, { 'retry-after': '3600' });
      res.end();
    });
    await engine.limits.define({ name: 'poll-api', limit: 100, period: '1s' });
    const wf = await service.definitions.create({ name: 'pushed-poll', steps: [poll({ name: 'poll-api' }, url)] });
    const before = Date.now();
    const { execution_id } = await service.executions.execute(wf.id, {});
    await eventually(async () =>
      (await engine.journal.readStream(`run:${execution_id}`)).some((e) => e.type === 'poll.attempted'),
    );
    const shared = await take('poll-api', 1);
    expect(shared).toMatchObject({ ok: false, name: 'poll-api' });
    expect((shared as { retryAt: number }).retryAt).toBeGreaterThanOrEqual(before + 3_600_000 - 1000);
  });

  it('refuses at save time a poll naming a rate limit that does not exist, or a charge that reads no output', async () => {
    const unknown = service.definitions.create({ name: 'unknown-poll-limit', steps: [poll({ name: 'nope' })] });
    await expect(unknown).rejects.toBeInstanceOf(ValidationError);
    await expect(unknown).rejects.toThrow("steps[0].rate_limit.name: no rate limit named 'nope'");
    await engine.limits.define({ name: 'poll-x', limit: 1, period: '1s' });
    const charged = service.definitions.create({
      name: 'bad-charge',
      steps: [poll({ name: 'poll-x', charge: 'body.used' })],
    });
    await expect(charged).rejects.toBeInstanceOf(ValidationError);
    await expect(charged).rejects.toThrow(/steps\[0\]\.rate_limit\.charge: must name a field of the step's output/);
  });
});
