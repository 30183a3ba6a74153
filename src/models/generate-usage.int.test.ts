import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { startMockServices, type MockServices } from '../mock-services/index.js';
import { RUN_EVENT } from '../runtime/events.js';
import type { Generation } from '../runtime/model.js';
import { runStream } from '../runtime/pass/history.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { offlineModel } from './offline.js';
import { openAiCompatibleModel } from './openai-compatible.js';

const ask = (content: string) => [{ role: 'user' as const, content }];

/**
 * Three model calls under a budget of 20 tokens, a signal between the first two: the second pass counts the first
 * call's tokens from the journal, the third call finds 24 of 20 used and the run fails before it.
 */
const spender = workflow('gen-budget', { budget: { tokens: 20 } }, async (ctx) => {
  const model = offlineModel();
  await ctx.generate('one', { model, messages: ask('one two') });
  await ctx.waitForEvent('go', { timeout: '1m' });
  await ctx.generate('two', { model, messages: ask('one two') });
  await ctx.generate('three', { model, messages: ask('one two') });
});

let mockUrl = '';
const priced = workflow('gen-priced', async (ctx) =>
  ctx.generate('priced', {
    model: openAiCompatibleModel({ url: `${mockUrl}/v1`, model: 'mock-1', price: { input: 2, output: 10 } }),
    messages: ask('what does it cost?'),
    rateLimit: { name: 'tokens' },
  }),
);

describe.each(backends)('what ctx.generate uses, on $name', (backend) => {
  let mock: MockServices;
  let engine: Engine;
  let close: () => Promise<void>;
  beforeAll(async () => {
    mock = await startMockServices();
    mockUrl = mock.url;
    ({ engine, close } = await testEngine(backend, { workflows: [spender, priced], pollMs: 50 }));
  });
  afterAll(async () => {
    await close();
    await mock.close();
  });

  it("charges a call's tokens to the run's budget, across passes, and stops the call past it", async () => {
    const run = await engine.start(spender, undefined, { id: 'spend-1' });
    await eventually(async () => (await engine.run('spend-1')).status === 'waiting', 20_000);
    await engine.signal('spend-1', 'go', {});
    await expect(run.result()).rejects.toThrow('BudgetExceededError: budget: 24 of 20 tokens');
    const events = await engine.journal.readStream(runStream('spend-1'), { limit: 10_000 });
    const used = events
      .filter((e) => e.type === RUN_EVENT.stepCompleted)
      .map((e) => (e.data as { name: string; used: unknown }).used);
    // the offline model counts 2 tokens in and 10 out; it has no price
    expect(used).toEqual([
      { tokens: 12, cost: 0 },
      { tokens: 12, cost: 0 },
    ]);
    expect(
      events.filter((e) => e.type === RUN_EVENT.stepStarted).map((e) => (e.data as { name: string }).name),
    ).toEqual(['one', 'two']);
  });

  it('prices the tokens and charges a rate limit by the tokens the model really used', async () => {
    await engine.limits.define({ name: 'tokens', limit: 10_000, period: '1m' });
    const output = (await (await engine.start(priced, undefined, { id: 'priced-1' })).result()) as Generation;
    const { inputTokens, outputTokens, cost } = output.usage;
    expect(inputTokens).toBeGreaterThan(0);
    expect(outputTokens).toBeGreaterThan(0);
    expect(cost).toBeCloseTo((inputTokens! * 2 + outputTokens! * 10) / 1_000_000, 12);
    const events = await engine.journal.readStream(runStream('priced-1'), { limit: 10_000 });
    const charged = events.find((e) => e.type === RUN_EVENT.stepRateCharged)?.data as {
      charged: Array<{ name: string; units: number }>;
    };
    // one unit taken before the call, the rest of its tokens after
    expect(charged.charged).toEqual([
      expect.objectContaining({ name: 'tokens', units: inputTokens! + outputTokens! - 1 }),
    ]);
  });

  it('refuses a price that is not a number per million tokens, naming the field', () => {
    expect(() =>
      openAiCompatibleModel({ url: 'http://127.0.0.1:1/v1', model: 'm', price: { input: -1, output: 1 } }),
    ).toThrow(/price\.input/);
  });
});
