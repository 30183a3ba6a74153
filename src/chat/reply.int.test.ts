import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import type { Subscriber } from '../journal/subscription.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { Channels } from './channels.js';
import { offlineModel } from '../models/offline.js';
import type { Model, ModelMessage } from '../runtime/model.js';
import type { Message } from './message.js';
import { REPLY_SUBSCRIPTION, startReplyWorker, type ReplyDelta, type ReplyOptions } from './reply.js';

const fast: ReplyOptions = {
  maxAttempts: 5,
  backoff: { baseMs: 5, factor: 1, maxMs: 5, jitter: 0 },
  from: 'beginning',
};

/** The offline model, recording what it was asked; `fail(question, call)` makes a call throw before answering. */
function countingProvider(
  fail: (content: string, call: number) => boolean = () => false,
): Model & { calls: number; asked: string[] } {
  const offline = offlineModel();
  const provider = {
    id: 'offline',
    continuation: 'restart' as const,
    calls: 0,
    asked: [] as string[],
    stream(request: Parameters<Model['stream']>[0]) {
      provider.calls += 1;
      const last = request.messages.at(-1)?.content ?? '';
      provider.asked.push(last);
      if (fail(last, provider.calls)) throw new Error(`model down (call ${provider.calls})`);
      return offline.stream(request);
    },
  };
  return provider;
}

/** A model that answers `text` to anything and records the context it was given. */
function recording(text: string, seen: ModelMessage[][]): Model {
  return {
    id: 'recorder',
    continuation: 'restart',
    async *stream({ messages }) {
      seen.push(messages);
      yield { type: 'text', text };
      yield { type: 'finish', finishReason: 'stop' };
    },
  };
}

describe.each(backends)('AI replies on $name', (backend) => {
  let engine: Engine;
  let close: () => Promise<void>;
  let channels: Channels;
  beforeEach(async () => {
    ({ engine, close } = await testEngine(backend));
    channels = new Channels(engine.store, engine.journal);
  });
  afterEach(() => close());

  const ask = (channelId: string, content: string, eventId?: string) =>
    channels.post(channelId, { sender_id: 'u1', role: 'user', content, ...(eventId ? { event_id: eventId } : {}) });
  const replies = async (channelId: string) =>
    (await channels.history(channelId, { limit: 500 })).messages.filter((m) => m.role === 'ai');
  const oneReply = (channelId: string) =>
    eventually(async () => ((await replies(channelId)).length > 0 ? replies(channelId) : undefined));

  /** Moves the subscription's cursor back to the start, as an operator would, while no worker holds it. */
  const resetCursor = async (name: string) => {
    const operator = { name, owner: 'operator' };
    await engine.store.subscriptionLease({ ...operator, ttlMs: 10_000 });
    await engine.store.subscriptionAdvance({ ...operator, cursor: '' });
    await engine.store.subscriptionRelease(operator);
  };

  it('answers a user message once, with a derived event_id, streaming deltas; ai and system messages get no answer', async () => {
    const deltas: ReplyDelta[] = [];
    const worker = await startReplyWorker(engine, channels, offlineModel(), {
      ...fast,
      onDelta: (d) => deltas.push(d),
    });
    const { message: question } = await ask('support', 'hello there', 'q-1');
    const [reply] = await oneReply('support');
    expect(reply).toMatchObject({
      seq: 2,
      event_id: 'reply:q-1',
      role: 'ai',
      sender_id: 'ai',
      content: 'You said: "hello there" (offline model; 1 messages of context)',
      content_type: 'markdown',
      metadata: { reply_to: question.message_id, reply_to_seq: 1, provider: 'offline' },
    });
    expect(deltas.map((d) => d.delta).join('')).toBe(reply!.content);
    expect(
      deltas.every(
        (d) =>
          d.channel_id === 'support' &&
          d.reply_to === question.message_id &&
          d.event_id === 'reply:q-1' &&
          d.attempt === 1,
      ),
    ).toBe(true);
    await channels.post('support', { sender_id: 'ops', role: 'system', content: 'agent joined' });
    await channels.post('support', { sender_id: 'bot', role: 'ai', content: 'unprompted' });
    await ask('support', 'second question');
    const all = await eventually(async () => {
      const { messages } = await channels.history('support');
      return messages.length === 6 ? messages : undefined;
    });
    await worker.idle();
    expect(all.map((m) => [m.seq, m.role])).toEqual([
      [1, 'user'],
      [2, 'ai'],
      [3, 'system'],
      [4, 'ai'],
      [5, 'user'],
      [6, 'ai'],
    ]);
    expect(all[5]?.content).toBe('You said: "second question" (offline model; 5 messages of context)');
    expect(await engine.parked(REPLY_SUBSCRIPTION)).toEqual([]);
  });

  it('gives the model the last contextSize messages, oldest first, in chat-completion roles', async () => {
    const seen: ModelMessage[][] = [];
    const recorder = recording('noted', seen);
    await channels.post('ctx', { sender_id: 'ops', role: 'system', content: 'be brief' });
    await channels.post('ctx', { sender_id: 'bot', role: 'ai', content: 'hi' });
    await ask('ctx', 'one');
    await ask('ctx', 'two');
    const worker = await startReplyWorker(engine, channels, recorder, { ...fast, contextSize: 3 });
    await eventually(async () => (await replies('ctx')).length === 3);
    await worker.idle();
    expect(seen).toEqual([
      [
        { role: 'system', content: 'be brief' },
        { role: 'assistant', content: 'hi' },
        { role: 'user', content: 'one' },
      ],
      [
        { role: 'assistant', content: 'hi' },
        { role: 'user', content: 'one' },
        { role: 'user', content: 'two' },
      ],
    ]);
  });

  it('writes no second reply when the messages are delivered again', async () => {
    const provider = countingProvider();
    await ask('again', 'ping', 'q-1');
    // the reply lands beyond the window the worker looks in before asking the model again
    for (let i = 0; i < 101; i++)
      await channels.post('again', { sender_id: 'ops', role: 'system', content: `note ${i}` });
    let worker: Subscriber = await startReplyWorker(engine, channels, provider, fast);
    await eventually(async () => (await replies('again')).length === 1);
    await worker.idle();
    await worker.stop();
    const before = await channels.history('again', { limit: 500 });
    expect(provider.calls).toBe(1);

    await resetCursor(REPLY_SUBSCRIPTION);
    worker = await startReplyWorker(engine, channels, provider, fast);
    await worker.idle();
    await worker.stop();
    expect(await channels.history('again', { limit: 500 })).toEqual(before);
    // the reply is too far to be seen: the run that generated it returns its recorded answer, the model is not asked
    expect(provider.calls).toBe(1);

    // the reply is now right after a second question: found without asking the model
    await ask('near', 'pong', 'q-2');
    worker = await startReplyWorker(engine, channels, provider, fast);
    await eventually(async () => (await replies('near')).length === 1);
    await worker.idle();
    await worker.stop();
    const asked = provider.asked.length;
    await resetCursor(REPLY_SUBSCRIPTION);
    worker = await startReplyWorker(engine, channels, provider, fast);
    await worker.idle();
    expect(provider.asked.slice(asked)).toEqual([]);
    expect(await replies('near')).toHaveLength(1);
    expect(await replies('again')).toHaveLength(1);
  });

  it('retries a failing model with backoff and stores one reply', async () => {
    const provider = countingProvider((_content, call) => call <= 3);
    const attempts: number[] = [];
    const worker = await startReplyWorker(engine, channels, provider, {
      ...fast,
      onDelta: (d) => attempts.push(d.attempt),
    });
    await ask('flaky', 'are you there?');
    const [reply] = await oneReply('flaky');
    await worker.idle();
    expect(provider.calls).toBe(4);
    expect(reply?.content).toBe('You said: "are you there?" (offline model; 1 messages of context)');
    expect(new Set(attempts)).toEqual(new Set([4]));
    expect(await replies('flaky')).toHaveLength(1);
    expect(await engine.parked(REPLY_SUBSCRIPTION)).toEqual([]);
  });

  it('parks a message whose model keeps failing, answers other channels, and answers it once when retried', async () => {
    let broken = true;
    const provider = countingProvider((content) => broken && content === 'doomed');
    const worker = await startReplyWorker(engine, channels, provider, { ...fast, maxAttempts: 3 });
    const { message: doomed } = await ask('down', 'doomed');
    const [parked] = await eventually(async () => {
      const list = await engine.parked(REPLY_SUBSCRIPTION);
      return list.length > 0 ? list : undefined;
    });
    expect(parked).toMatchObject({ status: 'parked', attempts: 3, error: 'Error: model down (call 3)' });
    expect(parked?.event.streamId).toBe('channel:down');
    expect(parked?.event.version).toBe(doomed.seq);

    await ask('up', 'fine');
    expect((await oneReply('up')).map((m: Message) => m.content)).toEqual([
      'You said: "fine" (offline model; 1 messages of context)',
    ]);
    await worker.idle();
    expect(await replies('down')).toEqual([]);

    broken = false;
    await engine.retryParked(REPLY_SUBSCRIPTION, parked!.position);
    const [reply] = await oneReply('down');
    expect(reply).toMatchObject({
      event_id: `reply:${doomed.event_id}`,
      content: 'You said: "doomed" (offline model; 1 messages of context)',
    });
    await eventually(async () => (await engine.parked(REPLY_SUBSCRIPTION))[0]?.status === 'resolved');
    await worker.idle();
    expect(await replies('down')).toHaveLength(1);
    expect(await replies('up')).toHaveLength(1);
  });

  it('starts a new subscription at the end of the journal unless told otherwise', async () => {
    await ask('old', 'asked before replies were turned on');
    const worker = await startReplyWorker(engine, channels, offlineModel(), { ...fast, from: undefined });
    await ask('new', 'asked after');
    await oneReply('new');
    await worker.idle();
    expect(await replies('old')).toEqual([]);
  });

  it('aborts a model that does not answer in time and counts it as a failed attempt', async () => {
    const hanging: Model = {
      id: 'hanging',
      continuation: 'restart',
      async *stream({ signal }) {
        await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      },
    };
    await startReplyWorker(engine, channels, hanging, { ...fast, maxAttempts: 2, timeoutMs: 50 });
    await ask('slow', 'anyone?');
    const [parked] = await eventually(async () => {
      const list = await engine.parked(REPLY_SUBSCRIPTION);
      return list.length > 0 ? list : undefined;
    });
    expect(parked?.error).toBe('TimeoutError: step timed out after 50 ms');
    expect(await replies('slow')).toEqual([]);
  });
});
