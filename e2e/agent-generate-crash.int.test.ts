import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { serve, type Served } from './child.js';
import { readRunStream } from './run-stream.js';

/**
 * A ledger agent's `ctx.generate` across a kill -9 of `runledger serve` mid-answer: the agent's run continues the
 * answer from its journaled text (the model is asked to continue the prefix), a client of the run's stream reads it
 * whole and once, and the tokens are charged once.
 */
describe.each(backends)("a ledger agent's ctx.generate across a kill -9 of serve on $name", (backend) => {
  let mock: MockServices;
  let module: string;
  const servers: Served[] = [];

  beforeAll(async () => {
    mock = await startMockServices();
    const dir = mkdtempSync(join(tmpdir(), 'rl-agent-generate-'));
    module = join(dir, 'agents.mjs');
    writeFileSync(
      module,
      `import { defineAgent, openAiCompatibleModel } from '${resolve('dist/index.js')}';
const model = openAiCompatibleModel({ url: process.env.MOCK_MODEL_URL, model: 'mock-1' });
export const writer = defineAgent('writer', {
  ledger: {},
  background: async (input, ctx) => {
    const text = input.events[0].payload.text;
    await ctx.node('answer', async () => (await ctx.generate('answer', { model, messages: [{ role: 'user', content: text }] })).text);
  },
});
`,
    );
  });
  afterEach(() => {
    for (const s of servers.splice(0)) s.proc.kill('SIGKILL');
    mock.reset();
  });
  afterAll(() => mock.close());

  const start = async (database: string, dataDir: string) => {
    const s = await serve(database, ['--agents', module], {
      MOCK_MODEL_URL: `${mock.url}/v1`,
      RUNLEDGER_DATA_DIR: dataDir,
      RUNLEDGER_LEASE_MS: '1500',
      RUNLEDGER_POLL_MS: '100',
    });
    servers.push(s);
    return s;
  };

  it('takes the answer up at the journaled text; the client reads it whole, once', async () => {
    mock.model.configure({ words: 80, delay_ms: 50 });
    const database = await backend.create();
    const dataDir = mkdtempSync(join(tmpdir(), 'rl-agent-generate-data-'));
    const first = await start(database, dataDir);
    const question = 'what does an agent keep?';
    const sent = await fetch(`${first.url}/agent/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        conversation_id: 'c-1',
        user_id: 'u-1',
        source: 'test',
        input_type: 'text',
        agent: 'writer',
        payload: { text: question },
      }),
    });
    expect(sent.status).toBe(202);
    const { run_id: runId } = await sent.json();
    const full = mock.model.answer([{ role: 'user', content: question }]);

    const before = readRunStream(first.url, runId, null);
    await eventually(() => before.texts().reduce((n, t) => n + t.text.length, 0) > full.length / 3, 20_000);
    first.proc.kill('SIGKILL');
    await first.exited;
    await before.done;
    const had = before.texts();
    const lastId = before.got.at(-1)!.id;

    const second = await start(database, dataDir);
    const after = readRunStream(second.url, runId, lastId);
    await after.done;
    expect(after.got.at(-1)?.event).toBe('end');

    // no gap, no repeat
    const pieces = [...had, ...after.texts()];
    let at = 0;
    for (const p of pieces) {
      expect(p).toMatchObject({ step: 'generate:answer', at });
      at += p.text.length;
    }
    expect(pieces.map((p) => p.text).join('')).toBe(full);

    // the second request continued the journaled prefix
    const requests = mock.model.requests();
    expect(requests).toHaveLength(2);
    const seam = requests[1]!.prefix;
    expect(seam).toBeGreaterThanOrEqual(had.reduce((n, t) => n + t.text.length, 0));
    expect(requests[1]).toMatchObject({ continued: true, outcome: 'done' });
    expect(requests[1]!.messages.at(-1)).toEqual({ role: 'assistant', content: full.slice(0, seam) });

    const run = await eventually(async () => {
      const body = await (await fetch(`${second.url}/agent/runs/${runId}`)).json();
      return body.status === 'success' ? body : undefined;
    }, 20_000);
    expect(run.checkpoints[0].state).toBe(full);
    // the answer's tokens, as the model's last attempt reported them, charged to the run once
    const generated = after.got.find((m) => m.event === 'generated');
    const { usage } = JSON.parse(generated!.data) as { usage: { inputTokens: number; outputTokens: number } };
    const view = await (await fetch(`${second.url}/runs/${runId}`)).json();
    expect(view.usage.tokens).toBeGreaterThan(0);
    expect(view.usage.tokens).toBe((usage.inputTokens ?? 0) + (usage.outputTokens ?? 0));
  }, 90_000);
});
