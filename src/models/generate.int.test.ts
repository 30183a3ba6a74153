import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { startMockServices, type MockServices } from '../mock-services/index.js';
import { RUN_EVENT } from '../runtime/events.js';
import type { GenerateOptions, Generation, Model } from '../runtime/model.js';
import { journaledText } from '../runtime/pass/generate.js';
import { runStream } from '../runtime/pass/history.js';
import { recordedHistory, replayHistories } from '../runtime/replay.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { offlineModel } from './offline.js';
import { openAiCompatibleModel } from './openai-compatible.js';

const question = [{ role: 'user' as const, content: 'why journal?' }];
const fast = { maxAttempts: 3, backoff: { base: 10, max: 20 } };

/** Generates with the model and options of its input, then waits for a signal: the next pass replays the generation. */
const models = new Map<string, Model | Model[]>();
const answer = workflow('answer', async (ctx, input: { model: string; options?: Partial<GenerateOptions> }) => {
  const generation = await ctx.generate('answer', {
    model: models.get(input.model)!,
    messages: question,
    retry: fast,
    ...input.options,
  });
  await ctx.waitForEvent('again', { timeout: '1m' });
  return generation;
});

describe.each(backends)('ctx.generate on $name', (backend) => {
  let mock: MockServices;
  let engine: Engine;
  let close: () => Promise<void>;
  beforeAll(async () => {
    mock = await startMockServices();
    models.set('offline', offlineModel());
    models.set('mock', openAiCompatibleModel({ url: `${mock.url}/v1`, model: 'mock-1', apiKey: 'sk-secret-4242' }));
    models.set('restart', openAiCompatibleModel({ url: `${mock.url}/v1`, model: 'mock-1', continuation: 'restart' }));
    models.set('chain', [
      models.get('mock') as Model,
      openAiCompatibleModel({ url: `${mock.url}/v1`, model: 'mock-2' }),
    ]);
    ({ engine, close } = await testEngine(backend, { workflows: [answer], pollMs: 50 }));
  });
  afterAll(async () => {
    await close();
    await mock.close();
  });
  afterEach(() => mock.reset());

  /** Starts a run and waits until its generation ended (the run waits for its signal) or the run failed. */
  async function generate(id: string, input: Parameters<typeof answer.run>[1]) {
    await engine.start(answer, input, { id });
    const view = await eventually(async () => {
      const v = await engine.run(id);
      return v.status === 'failed' || v.status === 'waiting' ? v : undefined;
    }, 20_000);
    const events = await engine.journal.readStream(runStream(id), { limit: 100_000 });
    return { view, events, step: view.steps.find((s) => s.name === 'answer')! };
  }
  const texts = (events: Awaited<ReturnType<typeof generate>>['events']) =>
    events.filter((e) => e.type === RUN_EVENT.stepText).map((e) => e.data as { at: number; text: string });

  it('records the offline answer, its usage, and the streamed text that makes it', async () => {
    const { step, events } = await generate('off-1', { model: 'offline' });
    const output = step.output as Generation;
    expect(output.text).toBe('You said: "why journal?" (offline model; 1 messages of context)');
    expect(output.finishReason).toBe('stop');
    expect(output.usage).toMatchObject({
      model: 'offline',
      inputTokens: 2,
      outputTokens: 10,
      attempts: 1,
      resumedAt: null,
    });
    expect(output.usage.promptHash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(journaledText(events.filter((e) => e.data && (e.data as { seq?: unknown }).seq === 1))).toBe(output.text);
  });

  it('streams the mock model through the AI SDK, and a replay returns the recorded answer without asking again', async () => {
    mock.model.configure({ words: 30, delay_ms: 5 });
    const { step, events } = await generate('mock-1', { model: 'mock' });
    const output = step.output as Generation;
    expect(output.text).toBe(mock.model.answer(question));
    const words = output.text.match(/\s*\S+/g)!.length;
    expect(output.usage).toMatchObject({ model: 'openai-compatible:mock-1', inputTokens: 2, outputTokens: words });
    expect(
      texts(events)
        .map((t) => t.text)
        .join(''),
    ).toBe(output.text);
    await engine.signal('mock-1', 'again', null);
    const done = await eventually(async () => {
      const v = await engine.run('mock-1');
      return v.status === 'success' ? v : undefined;
    });
    expect((done.output as Generation).text).toBe(output.text);
    // and a replay of the whole history (runledger replay) reaches its end on the recorded answer
    const [replayed] = await replayHistories([await recordedHistory(engine, 'mock-1')], [answer]);
    expect(replayed).toMatchObject({ replays: true });
    expect(mock.model.requests()).toHaveLength(1);
    // the key went in the request header only
    const journal = JSON.stringify(await engine.journal.readStream(runStream('mock-1'), { limit: 100_000 }));
    expect(journal).not.toContain('sk-secret-4242');
  });

  it('continues after a malformed chunk from the journaled text: the model is asked to continue, nothing repeats', async () => {
    mock.model.configure({ words: 30, delay_ms: 5 });
    mock.model.setFaults([{ kind: 'malformed', after: 8 }]);
    const { step, events } = await generate('bad-chunk', { model: 'mock' });
    const failed = events.find((e) => e.type === RUN_EVENT.stepFailed)!.data as { error: string };
    expect(failed.error).toContain('malformed_stream');
    const resumed = events.find((e) => e.type === RUN_EVENT.stepResumed)!.data as { at: number; mode: string };
    const [first, second] = mock.model.requests();
    const full = mock.model.answer(question);
    expect(resumed.at).toBeGreaterThan(0);
    expect(resumed.mode).toBe('prefix');
    // the second request ends with the journaled prefix as the assistant's message, and was continued after it
    expect(second!.messages.at(-1)).toEqual({ role: 'assistant', content: full.slice(0, resumed.at) });
    expect(second).toMatchObject({ prefix: resumed.at, continued: true });
    expect(first!.messages).toHaveLength(1);
    const output = step.output as Generation;
    expect(output.text).toBe(full);
    expect(output.usage).toMatchObject({ attempts: 2, resumedAt: resumed.at });
    // the batches, in order, are the answer: each starts where the last ended
    let at = 0;
    for (const t of texts(events)) {
      expect(t.at).toBe(at);
      at += t.text.length;
    }
    expect(at).toBe(full.length);
  });

  it('restarts a model that does not continue, dropping the text it already journaled', async () => {
    mock.model.configure({ words: 30, delay_ms: 5 });
    mock.model.setFaults([{ kind: 'no_finish', after: 10 }]);
    const { step, events } = await generate('restart', { model: 'restart' });
    const full = mock.model.answer(question);
    expect((step.output as Generation).text).toBe(full);
    expect(
      texts(events)
        .map((t) => t.text)
        .join(''),
    ).toBe(full);
    const requests = mock.model.requests();
    expect(requests).toHaveLength(2);
    expect(requests[1]!.messages).toEqual(requests[0]!.messages);
    expect(events.find((e) => e.type === RUN_EVENT.stepResumed)!.data).toMatchObject({ mode: 'restart' });
    // the model said the same again in place of the journaled text
    expect(events.find((e) => e.type === RUN_EVENT.stepCompleted)!.data).toMatchObject({ seamMatched: true });
  });

  it('fails with an error that names what went wrong: no finish reason, malformed data, maxTokens', async () => {
    mock.model.configure({ words: 30, delay_ms: 1 });
    mock.model.setFaults([{ kind: 'no_finish', after: 4 }]);
    const once = { retry: { maxAttempts: 1 } };
    const nofinish = await generate('no-finish', { model: 'mock', options: once });
    expect(nofinish.view.status).toBe('failed');
    expect(nofinish.view.error).toContain('no_finish_reason');
    mock.model.setFaults([{ kind: 'malformed', after: 2 }]);
    const malformed = await generate('malformed', { model: 'mock', options: once });
    expect(malformed.view.error).toContain('malformed_stream');
    const cut = await generate('too-long', { model: 'mock', options: { maxTokens: 5 } });
    expect(cut.view.error).toContain('max_tokens');
    expect(cut.view.error).toContain('maxTokens (5)');
    // not retried: trying again would cut it again
    expect(mock.model.requests().filter((r) => r.max_tokens === 5)).toHaveLength(1);
    const offline = await generate('offline-cut', { model: 'offline', options: { maxTokens: 3 } });
    expect(offline.view.error).toContain('max_tokens');
  });

  it('moves a failed attempt to the next model of its chain at once; the backup continues the journaled text', async () => {
    mock.model.configure({ words: 30, delay_ms: 2 });
    mock.model.setFaults([{ kind: 'malformed', after: 6 }]);
    const { step, events } = await generate('chain', { model: 'chain', options: { retry: { maxAttempts: 2 } } });
    const failed = events.find((e) => e.type === RUN_EVENT.stepFailed)!;
    expect(failed.data).toMatchObject({ fallback: 'openai-compatible:mock-2' });
    // no backoff before the backup
    expect((failed.data as { retryAt: number }).retryAt).toBeLessThanOrEqual(failed.timestamp);
    const [first, second] = mock.model.requests();
    expect([first!.model, second!.model]).toEqual(['mock-1', 'mock-2']);
    expect(second).toMatchObject({ continued: true });
    const output = step.output as Generation;
    expect(output.text).toBe(mock.model.answer(question));
    expect(output.usage.model).toBe('openai-compatible:mock-2');
    const started = events
      .filter((e) => e.type === RUN_EVENT.stepStarted)
      .map((e) => (e.data as { input: { model: string } }).input.model);
    expect(started).toEqual(['openai-compatible:mock-1', 'openai-compatible:mock-2']);
  });

  it('keeps the API key out of errors and the journal when the server refuses it', async () => {
    mock.model.setFaults([{ kind: 'status', status: 401 }]);
    const { view, events } = await generate('refused', { model: 'mock' });
    expect(view.status).toBe('failed');
    expect(view.error).toContain('401');
    expect(JSON.stringify(events)).not.toContain('sk-secret-4242');
    expect(mock.model.requests()).toHaveLength(1);
  });

  it('refuses bad options, naming the field', async () => {
    const { view } = await generate('bad-max', { model: 'offline', options: { maxTokens: 0 } });
    expect(view.error).toContain('generate(answer).maxTokens');
    const empty = await generate('bad-chain', { model: 'offline', options: { model: [] } });
    expect(empty.view.error).toContain('generate(answer).model: a fallback chain is 1 to 10 models');
  });
});
