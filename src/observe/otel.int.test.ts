import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../server/app.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';
import { triggers } from '../triggers/service.js';
import { createRunStarter } from '../triggers/starter.js';
import { startTracing } from './otel.js';

interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  kind: number;
}

const body = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => resolve(text));
  });

/** An OTLP/HTTP receiver: keeps every span of every JSON export it is sent. */
async function receiver(): Promise<{ url: string; spans: ReceivedSpan[]; server: Server }> {
  const spans: ReceivedSpan[] = [];
  const server = createServer(async (req, res) => {
    const text = await body(req);
    if (req.url === '/v1/traces' && req.headers['content-type']?.includes('json')) {
      const payload = JSON.parse(text) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: ReceivedSpan[] }> }> };
      for (const r of payload.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans);
    }
    res.setHeader('content-type', 'application/json');
    res.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, server };
}

describe('tracing off', () => {
  it('is null without the OTLP environment, so nothing is loaded', async () => {
    expect(await startTracing({})).toBeNull();
    expect(
      await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_SDK_DISABLED: 'true' }),
    ).toBeNull();
  });
});

describe.each(backends)('traces on $name', (backend) => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it("puts a stored execution's request, run and http_request step in the caller's trace, parent to child", async () => {
    const otlp = await receiver();
    closers.push(() => new Promise((resolve) => otlp.server.close(() => resolve())));
    const seen: Array<string | undefined> = [];
    const downstream = createServer((req, res) => {
      seen.push(req.headers.traceparent as string | undefined);
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    await new Promise<void>((resolve) => downstream.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => downstream.close(() => resolve())));

    const made = await testEngine(backend, { pollMs: 100 });
    closers.push(made.close);
    const tracer = (await startTracing({
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_SERVICE_NAME: 'runledger-test',
    }))!;
    closers.push(() => tracer.close());
    made.engine.useTracer(tracer);
    const workflows = storedWorkflows(made.engine, {
      secretKey: randomBytes(32),
      allow: ['127.0.0.1'],
    });
    const app = createApp({ engine: made.engine, workflows });

    const definition = {
      name: 'traced',
      steps: [
        {
          id: 'call',
          type: 'http_request',
          config: { method: 'GET', url: `http://127.0.0.1:${(downstream.address() as AddressInfo).port}/thing` },
        },
      ],
    };
    const wf = (await (
      await app.fetch(
        new Request('http://api/workflows', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(definition),
        }),
      )
    ).json()) as { id: string };
    const callerTrace = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const res = await app.fetch(
      new Request(`http://api/workflows/${wf.id}/execute`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: `00-${callerTrace}-${callerSpan}-01` },
        body: JSON.stringify({ trigger_data: {} }),
      }),
    );
    expect(res.status).toBe(202);
    const { execution_id } = (await res.json()) as { execution_id: string };
    await eventually(async () => (await workflows.executions.get(wf.id, execution_id)).status === 'success');
    // the traceparent is stored with the run: another process or a restart continues the trace
    const [started] = await made.engine.journal.readStream(`run:${execution_id}`, { limit: 1 });
    expect((started!.data as { traceparent: string }).traceparent).toMatch(
      new RegExp(`^00-${callerTrace}-[0-9a-f]{16}-01$`),
    );

    await tracer.flush();
    const spans = await eventually(() => {
      const inTrace = otlp.spans.filter((s) => s.traceId === callerTrace);
      return inTrace.some((s) => s.name === 'step call') ? inTrace : undefined;
    });
    const request = spans.find((s) => s.name === 'POST request')!;
    const run = spans.find((s) => s.name === 'run runledger.stored')!;
    const step = spans.find((s) => s.name === 'step call')!;
    expect(request.parentSpanId).toBe(callerSpan);
    expect(request.kind).toBe(2); // SERVER
    expect(run.parentSpanId).toBe(request.spanId);
    expect(step.parentSpanId).toBe(run.spanId);
    expect(seen).toEqual([`00-${callerTrace}-${step.spanId}-01`]);
  });

  it('carries the traceparent of POST /events to the runs its rules start', async () => {
    const made = await testEngine(backend, { pollMs: 100 });
    closers.push(made.close);
    const workflows = storedWorkflows(made.engine, { secretKey: randomBytes(32) });
    const service = triggers(made.engine, made.engine.store, {
      starter: createRunStarter({ engine: made.engine, store: made.engine.store, workflows }),
      schedulerEnabled: false,
    });
    await service.start();
    closers.push(() => service.stop());
    const app = createApp({ engine: made.engine, workflows, triggers: service });
    const wf = await workflows.definitions.create({
      name: 'on-event',
      steps: [{ id: 'a', type: 'transform', config: { mapping: { x: 1 } } }],
    });
    await service.rules.create({ name: 'all', pattern: { source: ['shop'] }, target: { workflow: wf.id } });
    const caller = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
    const res = await app.fetch(
      new Request('http://api/events', {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: caller },
        body: JSON.stringify({ source: 'shop', 'detail-type': 'paid' }),
      }),
    );
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    const runId = await eventually(async () => (await service.events.get(id)).matches[0]?.run_id ?? undefined);
    const [started] = await made.engine.journal.readStream(`run:${runId}`, { limit: 1 });
    expect((started!.data as { traceparent?: string }).traceparent).toBe(caller);
  });
});
