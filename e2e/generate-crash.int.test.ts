import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { backends } from '../src/testing/backends.js';
import { serve, type Served } from './child.js';
import { killMidAnswer } from './run-stream.js';

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

      const { second, seam: resumed } = await killMidAnswer(first, 'story-1', full, () =>
        start(database, dataDir, mode),
      );
      // the seam: the second attempt took the answer up where the journal had it, and asked the model to continue it
      expect(resumed).toMatchObject({ step: 'answer', mode });
      const seam = resumed.at;
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
