import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import { engineStore, type Engine } from '../engine.js';
import { TerminalError } from '../errors.js';
import { workflow } from '../runtime/workflow.js';
import { createApp } from '../server/app.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { RUN_EVENT } from '../runtime/events.js';
import { NOTIFY_QUEUE } from './events.js';
import { intake } from './intake.js';
import { notifications, NOTIFY_SUBSCRIPTION, type Notifications } from './service.js';

interface Received {
  delivery: string;
  event: string;
  signature: string;
  body: string;
  verified: boolean;
}

/** A loopback webhook receiver: answers each request with the next of `answers` (then 200), recording what came. */
async function receiver(answers: number[] = []) {
  const state = { received: [] as Received[], answers: [...answers], secret: '' };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const signature = String(req.headers['runledger-signature']);
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(signature) ?? [];
      const mac = createHmac('sha256', state.secret).update(`${t}.${body}`).digest();
      const verified = v1 !== undefined && timingSafeEqual(mac, Buffer.from(v1, 'hex'));
      const delivery = String(req.headers['runledger-delivery']);
      state.received.push({ delivery, event: String(req.headers['runledger-event']), signature, body, verified });
      res.writeHead(state.answers.shift() ?? 200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return Object.assign(state, { url, close: () => new Promise((resolve) => server.close(resolve)) });
}

const fails = workflow('fails', async (ctx, input: { why: string }) => {
  await ctx.step('work', async () => {
    throw new TerminalError(input.why);
  });
  return null;
});
const succeeds = workflow('succeeds', async (ctx) => ctx.step('work', async () => ({ ok: true })));
const approves = workflow('approves', async (ctx) => {
  await ctx.step('tool.request:send_email', async () => null);
  return ctx.waitForEvent('approval:abc', { timeout: '1m' });
});
const slow = workflow('slow', async (ctx, input: { ms: number }) => {
  await ctx.sleep('nap', input.ms);
  return 'done';
});

describe.each(backends)('notifications on $name', (backend) => {
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function setup(maxAttempts = 6) {
    const t = await testEngine(backend, { pollMs: 50, workflows: [fails, succeeds, slow, approves] });
    closers.push(t.close);
    const n = notifications(t.engine, engineStore(t.engine), {
      allow: ['127.0.0.1'],
      maxAttempts,
      backoff: { baseMs: 50, factor: 2, maxMs: 400, jitter: 0 },
    });
    const subscription = await n.start();
    return { engine: t.engine, n, subscription };
  }

  async function hook(n: Notifications, answers: number[], input: Record<string, unknown>) {
    const r = await receiver(answers);
    closers.push(r.close);
    const { info, secret } = await n.registry.create({ name: 'ops', url: r.url, events: [], ...input } as never);
    r.secret = secret;
    return { r, id: info.id };
  }

  const ended = (engine: Engine, id: string) => engine.runs.wait(id, { timeoutMs: 20_000, pollMs: 20 });

  it('delivers a failed run exactly once across 500, 500, 500, 200: one delivery id, each attempt signed', async () => {
    const { engine, n } = await setup();
    const { r, id } = await hook(n, [500, 500, 500], {
      events: ['run.failed'],
      body: { text: 'Run {{run.id}} of {{run.workflow}} failed: {{run.error}}', kind: '{{event.type}}' },
    });
    const other = await hook(n, [], { events: ['run.succeeded'], filter: { workflow: 'succeeds' } });
    const failed = await engine.start(fails, { why: 'card declined' });
    const ok = await engine.start(succeeds, {});
    await ended(engine, failed.id);
    await ended(engine, ok.id);
    const [delivery] = await eventually(async () => {
      const { deliveries } = await n.deliveries.list(id);
      return deliveries[0]?.status === 'delivered' ? deliveries : undefined;
    }, 20_000);
    expect(r.received).toHaveLength(4);
    expect(new Set(r.received.map((x) => x.delivery))).toEqual(new Set([delivery!.id]));
    expect(r.received.every((x) => x.verified && x.event === 'run.failed')).toBe(true);
    const body = JSON.parse(r.received[3]!.body);
    expect(body.kind).toBe('run.failed');
    expect(body.text).toMatch(new RegExp(`^Run ${failed.id} of fails failed: .*card declined`));
    expect(delivery!.attempts.map((a) => a.status)).toEqual([500, 500, 500, 200]);
    expect(delivery!.attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4]);
    expect(delivery!.attempts[0]!.error).toMatch(/500/);
    // the journal has each attempt
    const journaled = await engine.journal.readStream(`notification-delivery:${delivery!.id}`);
    expect(journaled.map((e) => (e.data as { status: number }).status)).toEqual([500, 500, 500, 200]);
    // the other notification saw only the successful run of its workflow, with the default payload
    await eventually(() => other.r.received.length === 1);
    const payload = JSON.parse(other.r.received[0]!.body);
    expect(payload).toMatchObject({
      type: 'run.succeeded',
      run: { id: ok.id, status: 'success', output: { ok: true } },
    });
    expect(other.r.received[0]!.verified).toBe(true);
    // the event handed to the subscription's handler again (a redelivery) enqueues nothing: notification + event key
    const [event] = await engine.journal.readAll({ streamPrefix: `run:${failed.id}`, types: [RUN_EVENT.runFailed] });
    const again = intake(engine, n.registry, n.deliveries, { maxAttempts: 6 });
    const prepared = await again.subscribe.prepare!(event!, { attempt: 1, subscription: NOTIFY_SUBSCRIPTION });
    expect(prepared).not.toBeNull();
    await engineStore(engine).transaction((tx) =>
      again.handler(event!, { tx, attempt: 1, subscription: NOTIFY_SUBSCRIPTION, prepared }),
    );
    expect((await n.deliveries.list(id)).deliveries.map((d) => d.id)).toEqual([delivery!.id]);
    expect(await engine.queue.list({ queue: NOTIFY_QUEUE })).toHaveLength(2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(r.received).toHaveLength(4);
  });

  it('dead-letters a delivery after its attempts, and a dead delivery notifies nobody', async () => {
    const { engine, n, subscription } = await setup(3);
    const { r, id } = await hook(n, [500, 503, 502, 500], { events: ['run.failed', 'task.dead'] });
    const run = await engine.start(fails, { why: 'boom' });
    await ended(engine, run.id);
    const [delivery] = await eventually(async () => {
      const { deliveries } = await n.deliveries.list(id);
      return deliveries[0]?.status === 'dead' ? deliveries : undefined;
    }, 20_000);
    expect(delivery!.attempts.map((a) => a.status)).toEqual([500, 503, 502]);
    // the attempt is recorded before the task settles: its move to the dead letters follows
    const dead = await eventually(async () => {
      const tasks = await engine.queue.dead({ queue: NOTIFY_QUEUE });
      return tasks.length > 0 ? tasks : undefined;
    });
    expect(dead.map((t) => t.id)).toEqual([delivery!.taskId]);
    // the subscription has read the dead delivery task's task.dead, and passed it over: no delivery of it
    await subscription.idle();
    expect((await n.deliveries.list(id)).deliveries).toHaveLength(1);
    expect(r.received).toHaveLength(3);
  });

  it('notifies a dead task of another queue, filtered by queue', async () => {
    const { engine, n } = await setup();
    const { r } = await hook(n, [], { events: ['task.dead'], filter: { queue: 'emails' } });
    engine.work('emails', async () => {
      throw new TerminalError('mailbox full');
    });
    engine.work('other', async () => {
      throw new TerminalError('nope');
    });
    await engine.queue.enqueue('other', {}, { maxAttempts: 1 });
    const { task } = await engine.queue.enqueue('emails', { to: 'a@b.c' }, { maxAttempts: 1 });
    await eventually(() => r.received.length === 1);
    const body = JSON.parse(r.received[0]!.body);
    expect(body).toMatchObject({ type: 'task.dead', task: { id: task.id, queue: 'emails' } });
    expect(body.task.error).toMatch(/mailbox full/);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(r.received).toHaveLength(1);
  });

  it('notifies an approval waiting, naming the tool, once', async () => {
    const { engine, n } = await setup();
    const { r } = await hook(n, [], {
      events: ['approval.waiting'],
      body: { approval: '{{event.approval}}', run: '{{run.id}}' },
    });
    const run = await engine.start(approves, {});
    await eventually(() => r.received.length === 1);
    expect(JSON.parse(r.received[0]!.body)).toEqual({
      approval: { signal: 'approval:abc', tool: 'send_email' },
      run: run.id,
    });
    await engine.signal(run.id, 'approval:abc', { decision: 'approved' });
    await ended(engine, run.id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(r.received).toHaveLength(1);
  });

  it('warns a run past warn_at of its timeout, and skips the warning of a run that ended before', async () => {
    const { engine, n } = await setup();
    const { r, id } = await hook(n, [], {
      events: ['run.timeout_warning'],
      warn_at: 0.5,
      body: { text: '{{run.id}} is {{run.status}}', type: '{{event.type}}' },
    });
    const quick = await engine.start(slow, { ms: 10 }, { timeout: '1s' });
    await ended(engine, quick.id);
    const long = await engine.start(slow, { ms: 1500 }, { timeout: '1200ms' });
    await eventually(() => r.received.length === 1, 10_000);
    expect(JSON.parse(r.received[0]!.body)).toEqual({ text: `${long.id} is sleeping`, type: 'run.timeout_warning' });
    const { deliveries } = await eventually(async () => {
      const page = await n.deliveries.list(id);
      return page.deliveries.every((d) => d.status !== 'scheduled') ? page : undefined;
    });
    const byRun = Object.fromEntries(deliveries.map((d) => [d.runId, d]));
    expect(byRun[long.id]).toMatchObject({ status: 'delivered', event: 'run.timeout_warning' });
    expect(byRun[quick.id]).toMatchObject({ status: 'skipped', attempts: [] });
    // due at half the timeout from the start (the deadline is set a moment before run.started commits)
    const due = byRun[long.id]!.deliverAt - byRun[long.id]!.createdAt;
    expect(due).toBeGreaterThan(400);
    expect(due).toBeLessThanOrEqual(600);
  });

  it('answers 400 naming the field for bad input, shows the secret once, and sends a test event', async () => {
    const { engine, n } = await setup();
    const workflows = storedWorkflows(engine, { secretKey: randomBytes(32), allow: ['127.0.0.1'] });
    const app = createApp({ engine, workflows, notifications: n });
    const post = (body: unknown) =>
      app.fetch(
        new Request('http://localhost/notifications', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      );
    const bad = async (body: object, path: string, message: RegExp) => {
      const res = await post({ name: 'x', url: 'http://127.0.0.1:9/h', events: ['run.failed'], ...body });
      expect(res.status).toBe(400);
      const { error } = (await res.json()) as { error: { problems: { path: string; message: string }[] } };
      expect(error.problems[0]!.path).toBe(path);
      expect(error.problems[0]!.message).toMatch(message);
    };
    await bad({ events: ['run.failed', 'run.exploded'] }, 'events[1]', /unknown event type "run.exploded"/);
    await bad({ body: { text: 'Run {{run.id | shout}}' } }, 'body.text', /unknown filter 'shout'/);
    await bad(
      { body: { blocks: [{ text: '{{secrets.token}}' }] } },
      'body.blocks[0].text',
      /only event\.\* and run\.\*/,
    );
    await bad({ body: { text: 'Run {{run.id' } }, 'body.text', /./);
    await bad({ url: 'http://169.254.169.254/latest' }, 'url', /SSRF/);
    await bad({ url: 'http://10.1.2.3/hook' }, 'url', /private/);
    await bad({ url: 'ftp://127.0.0.1/hook' }, 'url', /scheme/);
    await bad({ url: 'http://user:pw@127.0.0.1/hook' }, 'url', /credentials/);
    await bad({ warn_at: 1.5 }, 'warn_at', /between 0 and 1/);
    await bad({ filter: { colour: 'red' } }, 'filter.colour', /unknown filter/);

    const r = await receiver();
    closers.push(r.close);
    const created = await post({ name: 'ops', url: r.url, events: ['run.failed'] });
    expect(created.status).toBe(201);
    const { id, secret } = (await created.json()) as { id: string; secret: string };
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    r.secret = secret;
    const shown = await (await app.fetch(new Request(`http://localhost/notifications/${id}`))).text();
    expect(shown).not.toContain(secret);
    const listed = await (await app.fetch(new Request('http://localhost/notifications'))).text();
    expect(listed).not.toContain(secret);

    const tested = await app.fetch(new Request(`http://localhost/notifications/${id}/test`, { method: 'POST' }));
    expect(tested.status).toBe(200);
    expect(await tested.json()).toMatchObject({
      event: 'notification.test',
      status: 'delivered',
      attempts: [{ status: 200 }],
    });
    expect(r.received).toMatchObject([{ event: 'notification.test', verified: true }]);
    const page = await (await app.fetch(new Request(`http://localhost/notifications/${id}/deliveries`))).json();
    expect(page).toMatchObject({
      deliveries: [{ event: 'notification.test', attempts: [{ attempt: 1, status: 200 }] }],
    });

    const gone = await app.fetch(new Request(`http://localhost/notifications/${id}`, { method: 'DELETE' }));
    expect(gone.status).toBe(204);
    expect((await app.fetch(new Request(`http://localhost/notifications/${id}/deliveries`))).status).toBe(404);
  });
});
