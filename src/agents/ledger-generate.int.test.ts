import { afterEach, describe, expect, it } from 'vitest';
import { engineStore, type Engine } from '../engine.js';
import { offlineModel } from '../models/offline.js';
import { RUN_EVENT } from '../runtime/events.js';
import type { Model } from '../runtime/model.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import { AgentLedger } from './ledger.js';
import { sessions } from './service.js';

/** The offline model, counting the calls it streams. */
function counted(): Model & { calls: number } {
  const offline = offlineModel();
  const model = {
    id: offline.id,
    continuation: offline.continuation,
    calls: 0,
    stream: (request: Parameters<Model['stream']>[0]) => {
      model.calls += 1;
      return offline.stream(request);
    },
  };
  return model;
}

const QUESTION = [{ role: 'user' as const, content: 'draft a short note' }];
const ANSWER = 'You said: "draft a short note" (offline model; 1 messages of context)';

describe.each(backends)("a ledger agent's ctx.generate on $name", (backend) => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  async function open(model: Model) {
    const t = await testEngine(backend, { pollMs: 100 });
    close = t.close;
    // the node fails once after its answer: the retry gets the recorded answer, the model is not asked again
    const writer = defineAgent('writer', {
      ledger: { retry: { maxAttempts: 2, backoff: { base: '50ms', factor: 1 } } },
      background: async (_input, ctx) => {
        await ctx.node('draft', async ({ attempt }) => {
          const { text } = await ctx.generate('note', { model, messages: QUESTION });
          if (attempt === 1) throw new Error('the first attempt fails after the answer');
          return text;
        });
      },
    });
    const capped = defineAgent('capped', {
      ledger: {},
      flow: { budget: { tokens: 10, onExceed: 'fail' } },
      background: async (_input, ctx) => {
        await ctx.node('draft', () => ctx.generate('note', { model, messages: QUESTION }));
        await ctx.node('after', async () => 'never');
      },
    });
    const badName = defineAgent('bad-name', {
      ledger: { retry: { maxAttempts: 1 } },
      background: async (_input, ctx) => void (await ctx.generate('no spaces', { model, messages: QUESTION })),
    });
    const service = sessions(t.engine, engineStore(t.engine), { agents: [writer, capped, badName] });
    const ledger = new AgentLedger(t.engine, engineStore(t.engine), service, { defaultAgent: 'writer' });
    const start = async (agent: string) => {
      const { run_id } = await ledger.intake({
        conversation_id: `c-${agent}`,
        user_id: 'u-1',
        source: 'test',
        input_type: 'text',
        payload: {},
        idempotency_key: `k-${agent}`,
        agent,
      });
      return run_id;
    };
    const ended = (id: string) =>
      eventually(async () => {
        const run = await ledger.run(id);
        return run.status === 'success' || run.status === 'failed' ? run : undefined;
      }, 20_000);
    return { engine: t.engine, start, ended };
  }

  const events = (engine: Engine, runId: string) => engine.journal.readStream(`run:${runId}`, { limit: 1000 });

  it('records the call as a step with its usage, streams its text, charges its tokens, and never calls twice', async () => {
    const model = counted();
    const { engine, start, ended } = await open(model);
    const runId = await start('writer');
    const run = await ended(runId);
    expect(run.status).toBe('success');
    expect(run.steps.map((s: { node: string; status: string }) => [s.node, s.status])).toEqual([
      ['draft', 'error'],
      ['draft', 'ok'],
    ]);
    expect(run.checkpoints[0]?.state).toBe(ANSWER);
    expect(model.calls).toBe(1);

    await engine.runs.wait(runId, { timeoutMs: 20_000 });
    const journal = await events(engine, runId);
    const texts = journal
      .filter((e) => e.type === RUN_EVENT.stepText)
      .map((e) => e.data as { name: string; text: string });
    expect(texts.every((t) => t.name === 'generate:note')).toBe(true);
    expect(texts.map((t) => t.text).join('')).toBe(ANSWER);
    const completed = journal.find(
      (e) => e.type === RUN_EVENT.stepCompleted && (e.data as { name: string }).name === 'generate:note',
    );
    expect((completed!.data as { output: unknown }).output).toMatchObject({
      text: ANSWER,
      finishReason: 'stop',
      usage: { model: 'offline', inputTokens: 4, outputTokens: 12, attempts: 1 },
    });
    // charged once, although the node ran twice
    expect((await engine.run(runId)).usage).toMatchObject({ tokens: 16 });
  });

  it("stops a run whose answer passed the agent's token budget before its next step", async () => {
    const { start, ended } = await open(counted());
    const run = await ended(await start('capped'));
    expect(run.status).toBe('failed');
    expect(run.failure_reason).toContain('budget: 16 of 10 tokens');
  });

  it('refuses a call name it could not record, naming the rule', async () => {
    const model = counted();
    const { start, ended } = await open(model);
    const run = await ended(await start('bad-name'));
    expect(run.status).toBe('failed');
    expect(run.failure_reason).toContain("generate name must be 1 to 100 letters, digits, '.', '_' or '-'");
    expect(model.calls).toBe(0);
  });
});
