import { createHash, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../../server/app.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import { storedWorkflows } from '../../app/workflows.js';
import { NotFoundError } from '../../errors.js';
import { isBlobRef, type BlobRef } from './blobs.js';
import { workflow } from '../workflow.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe.each(backends)('values of any size on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });

  it('keeps big inputs, outputs, signal payloads and results as references in the journal and gives them back whole', async () => {
    const doc = (n: number) => ({ text: 'é'.repeat(n), n });
    const flow = workflow('big-values', async (ctx, input: { doc: { text: string; n: number } }) => {
      const made = await ctx.step('make', async () => doc(3000), { input: input.doc });
      const got = await ctx.waitForEvent<{ text: string }>('more');
      await ctx.sleep('nap', '10ms');
      // after the sleep this runs in a new pass, replaying the references from the journal
      const total = await ctx.step('measure', async () => made.text.length + got!.text.length + input.doc.text.length);
      return { total, echo: made };
    });
    const made = await testEngine(backend, { workflows: [flow], pollMs: 50, blobThresholdBytes: 1024 });
    close = made.close;
    const engine = made.engine;
    const run = await engine.start(flow, { doc: doc(2000) }, { id: 'big-1' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await engine.signal('big-1', 'more', { text: 'x'.repeat(5000) });
    expect(await run.result()).toEqual({ total: 10_000, echo: doc(3000) });

    const events = await engine.journal.readStream('run:big-1');
    const data = (type: string) => events.filter((e) => e.type === type).map((e) => e.data as Record<string, unknown>);
    expect(isBlobRef(data('run.started')[0]!.input)).toBe(true);
    expect(isBlobRef(data('step.started')[0]!.input)).toBe(true);
    expect(isBlobRef(data('step.completed')[0]!.output)).toBe(true);
    expect(data('step.completed')[1]!.output).toBe(10_000);
    expect(isBlobRef(data('signal.sent')[0]!.payload)).toBe(true);
    expect(isBlobRef(data('wait.completed')[0]!.payload)).toBe(true);
    expect(isBlobRef(data('run.completed')[0]!.output)).toBe(true);
    for (const e of events) expect(JSON.stringify(e.data).length, e.type).toBeLessThan(1024);

    const view = await engine.run('big-1');
    expect(view.input).toEqual({ doc: doc(2000) });
    expect(view.steps[0]).toMatchObject({ input: doc(2000), output: doc(3000) });

    const app = createApp({
      engine,
      workflows: storedWorkflows(engine, { secretKey: randomBytes(32) }),
      uiDir: null,
    });
    const res = await app.fetch(new Request('http://local/runs/big-1'));
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.output).toEqual({ total: 10_000, echo: doc(3000) });
    expect(body.steps[0].output).toEqual(doc(3000));
    const waited = (await (await app.fetch(new Request('http://local/runs/big-1/wait?timeout=1s'))).json()) as any;
    expect(waited.run.output).toEqual({ total: 10_000, echo: doc(3000) });

    // retention deletes the chunks with their run
    const ref = data('step.completed')[0]!.output as BlobRef;
    expect((await engine.store.blobGet({ hashes: ref.chunks })).length).toBe(ref.chunks.length);
    // once its last pass's task has completed too (retention keeps a run with a pass still to run)
    await eventually(async () => (await engine.retention.prune({ runs: 0 }, { pauseMs: 0 }))[0]!.runs === 1);
    await expect(engine.store.blobGet({ hashes: ref.chunks })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('runs a step whose output is 50 MB and streams it from the API; memory measured', async () => {
    const fifty = randomBytes(37_500_000).toString('base64');
    const digest = sha(fifty);
    const flow = workflow('fifty', async (ctx) => {
      const out = await ctx.step('render', async () => fifty);
      return ctx.step('digest', async () => sha(out));
    });
    const made = await testEngine(backend, { workflows: [flow], pollMs: 50 });
    close = made.close;
    const engine = made.engine;
    // the kernel's high-water mark of the process (the sampler alone misses synchronous SQLite work)
    const base = process.memoryUsage().rss;
    const highBefore = process.resourceUsage().maxRSS * 1024;
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const started = Date.now();
    try {
      const run = await engine.start(flow, {}, { id: 'fifty-1' });
      expect(await run.result({ pollMs: 100 })).toBe(digest);
      const ran = Date.now() - started;
      const app = createApp({
        engine,
        workflows: storedWorkflows(engine, { secretKey: randomBytes(32) }),
        uiDir: null,
      });
      const res = await app.fetch(new Request('http://local/runs/fifty-1'));
      // read as a stream, hashing the output's bytes as they come, without keeping the body
      const hash = createHash('sha256');
      let bytes = 0;
      for await (const piece of res.body as unknown as AsyncIterable<Uint8Array>) {
        hash.update(piece);
        bytes += piece.byteLength;
      }
      expect(bytes).toBeGreaterThan(50_000_000);
      const stepOutput = (await engine.run('fifty-1')).steps[0]!.output as string;
      expect(sha(stepOutput)).toBe(digest);
      const step = (await engine.journal.readStream('run:fifty-1')).find((e) => e.type === 'step.completed')!;
      expect(isBlobRef((step.data as { output: unknown }).output)).toBe(true);
      peak = Math.max(peak, process.resourceUsage().maxRSS * 1024);
      const mb = (n: number) => Math.round(n / 1e6);
      console.log(
        `[${backend.name}] 50 MB step output: run ${ran} ms; rss ${mb(base)} MB with the output made, peak ${mb(peak)} MB (+${mb(peak - base)} MB; high-water before ${mb(highBefore)} MB); API body ${bytes} bytes streamed`,
      );
    } finally {
      clearInterval(sampler);
    }
  }, 120_000);
});
