import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { sseReader, type SseMessage } from '../src/sse-read.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { serve, type Served } from './child.js';

interface Text {
  step: string;
  at: number;
  text: string;
}

/**
 * A client reading `GET /runs/{id}/stream` from `after` until the run's `end` or the connection breaks: what it got,
 * in order, and the id of the last message (its Last-Event-ID).
 */
function read(url: string, runId: string, after: string | null) {
  const got: SseMessage[] = [];
  const done = (async () => {
    const response = await fetch(`${url}/runs/${runId}/stream`, {
      headers: after === null ? {} : { 'last-event-id': after },
    });
    expect(response.status).toBe(200);
    const parse = sseReader();
    try {
      for await (const chunk of response.body!.pipeThrough(new TextDecoderStream()))
        for (const m of parse(chunk)) got.push(m);
    } catch {
      // the server was killed mid-stream: the client keeps what it read
    }
  })();
  return { got, done, texts: () => got.filter((m) => m.event === 'text').map((m) => JSON.parse(m.data) as Text) };
}

/**
 * The brief's crash test for ctx.generate: a real `runledger serve` runs a workflow whose model (our loopback
 * OpenAI-compatible mock, through the AI SDK) streams its answer slowly; a client reads the run's text over SSE; the
 * server is killed with SIGKILL mid-answer and started again; the client reconnects with its Last-Event-ID. Its
 * text has no gap and no repeat, and the model's second request continued the journaled prefix.
 */
describe.each(backends)('ctx.generate across a kill -9 of serve on $name', (backend) => {
  let mock: MockServices;
  let module: string;
  const servers: Served[] = [];

  beforeAll(async () => {
    mock = await startMockServices();
    const dir = mkdtempSync(join(tmpdir(), 'rl-generate-'));
    module = join(dir, 'workflows.mjs');
    writeFileSync(
      module,
      `import { openAiCompatibleModel, workflow } from '${resolve('dist/index.js')}';
const model = openAiCompatibleModel({
  url: process.env.MOCK_MODEL_URL,
  model: 'mock-1',
  apiKey: 'sk-e2e-secret',
  continuation: process.env.CONTINUATION,
});
export const story = workflow('story', async (ctx, input) => {
  const { text } = await ctx.generate('answer', { model, messages: [{ role: 'user', content: input.q }] });
  return text;
});
`,
    );
  });
  afterEach(() => {
    for (const s of servers.splice(0)) s.proc.kill('SIGKILL');
    mock.reset();
  });
  afterAll(() => mock.close());

  const start = async (database: string, dataDir: string, continuation: string) => {
    const s = await serve(database, ['--workflows', module], {
      MOCK_MODEL_URL: `${mock.url}/v1`,
      CONTINUATION: continuation,
      RUNLEDGER_DATA_DIR: dataDir,
      RUNLEDGER_LEASE_MS: '1500',
      RUNLEDGER_POLL_MS: '100',
    });
    servers.push(s);
    return s;
  };

  // prefix: the server continues the journaled text; restart: it answers again and the runtime drops what it had
  it.each(['prefix', 'restart'])(
    'takes the answer up at the journaled text (%s); the client reads it whole, once',
    async (mode) => {
      mock.model.configure({ words: 80, delay_ms: 50 });
      const database = await backend.create();
      const dataDir = mkdtempSync(join(tmpdir(), 'rl-generate-data-'));
      const first = await start(database, dataDir, mode);
      const started = await fetch(`${first.url}/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ workflow: 'story', id: 'story-1', input: { q: 'what survives a crash?' } }),
      });
      expect(started.status).toBe(202);
      const full = mock.model.answer([{ role: 'user', content: 'what survives a crash?' }]);

      const before = read(first.url, 'story-1', null);
      // mid-answer: the client has some text, the model has more to send
      await eventually(() => before.texts().reduce((n, t) => n + t.text.length, 0) > full.length / 3, 20_000);
      first.proc.kill('SIGKILL');
      await first.exited;
      await before.done;
      const had = before.texts();
      expect(had.length).toBeGreaterThan(0);
      const lastId = before.got.at(-1)!.id;

      const second = await start(database, dataDir, mode);
      const after = read(second.url, 'story-1', lastId);
      await after.done;
      expect(after.got.at(-1)?.event).toBe('end');

      // no gap, no repeat: each piece starts where the one before ended, and together they are the answer
      const pieces = [...had, ...after.texts()];
      let at = 0;
      for (const p of pieces) {
        expect(p.at).toBe(at);
        at += p.text.length;
      }
      expect(pieces.map((p) => p.text).join('')).toBe(full);

      // the seam: the second attempt took the answer up where the journal had it, and asked the model to continue it
      const resumed = after.got.filter((m) => m.event === 'resumed').map((m) => JSON.parse(m.data));
      expect(resumed).toHaveLength(1);
      expect(resumed[0]).toMatchObject({ step: 'answer', mode });
      const seam = resumed[0].at as number;
      expect(seam).toBeGreaterThanOrEqual(had.reduce((n, t) => n + t.text.length, 0));
      const requests = mock.model.requests();
      expect(requests).toHaveLength(2);
      expect(requests[0]!.outcome).toBe('gone');
      if (mode === 'prefix') {
        expect(requests[1]!.messages.at(-1)).toEqual({ role: 'assistant', content: full.slice(0, seam) });
        expect(requests[1]).toMatchObject({ prefix: seam, continued: true, outcome: 'done' });
        // the second request streamed only what followed the prefix
        expect(requests[1]!.chunks).toBe(full.slice(seam).match(/\s*\S+/g)!.length);
      } else {
        // asked again from the prompt: the whole answer came, its first `seam` characters were dropped
        expect(requests[1]!.messages).toEqual(requests[0]!.messages);
        expect(requests[1]).toMatchObject({ prefix: 0, outcome: 'done', chunks: full.match(/\s*\S+/g)!.length });
      }

      const run = await (await fetch(`${second.url}/runs/story-1`)).json();
      expect(run.status).toBe('success');
      expect(run.output).toBe(full);
      const events = await (await fetch(`${second.url}/runs/story-1/events?limit=1000`)).json();
      expect(JSON.stringify(events)).not.toContain('sk-e2e-secret');
    },
    90_000,
  );
});
