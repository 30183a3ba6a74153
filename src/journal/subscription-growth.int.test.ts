import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import type { Store } from '../storage/store.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { Subscriber, type SubscribeOptions } from './subscription.js';

/**
 * A subscription whose filters match nothing yet (the trigger routing waits for `event.received`,
 * the AI reply for a user message) must not read the journal from its start on every wake-up: it
 * moves its cursor past what it read, matched or not, without a transaction per event passed over.
 */
describe.each(backends)('a subscription as the journal grows, on $name', (backend) => {
  let engine: Engine;
  let close: () => Promise<void>;
  beforeEach(async () => ({ engine, close } = await testEngine(backend)));
  afterEach(() => close());

  /** The store, counting transactions and the events reads hand back. */
  function counted(store: Store) {
    const counts = { transactions: 0, eventsRead: 0, reads: 0 };
    const proxy = new Proxy(store, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (prop === 'transaction')
          return (fn: Parameters<Store['transaction']>[0]) => (counts.transactions++, target.transaction(fn));
        if (prop === 'eventReadCommitted') {
          return async (p: Parameters<Store['eventReadCommitted']>[0]) => {
            const read = await target.eventReadCommitted(p);
            counts.reads++;
            counts.eventsRead += read.events.length;
            return read;
          };
        }
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return { store: proxy, counts };
  }

  const noise = async (rounds: number) => {
    let last = 0;
    for (let i = 0; i < rounds; i++) {
      const { events } = await engine.journal.append(
        `run:${i}`,
        Array.from({ length: 50 }, (_, j) => ({ type: 'step.completed', data: { j } })),
      );
      last = events.at(-1)!.position;
    }
    return last;
  };
  const atHead = async (name: string, position: number) => {
    const head = await engine.store.eventHead();
    const settled = head === String(position) || head.endsWith(`:${position}`);
    return settled && (await engine.store.subscriptionGet({ name })).cursor === head;
  };

  it.each<[string, SubscribeOptions]>([
    ['types', { types: ['event.received'] }],
    ['a stream prefix', { streamPrefix: 'event:' }],
    ['both', { streamPrefix: 'event:', types: ['event.received'] }],
    ['a filter function', { filter: (event) => event.type === 'event.received' }],
  ])('moves its cursor past events %s does not match, with no transaction per event', async (_what, options) => {
    const { store, counts } = counted(engine.store);
    const seen: string[] = [];
    const sub = new Subscriber(
      store,
      'routing',
      { pollMs: 50, ...options },
      async (event) => void seen.push(event.streamId),
    );
    await sub.start();
    try {
      const last = await noise(6);
      // on PostgreSQL the committed-order horizon is the whole cluster's: another database's long transaction holds it back
      await eventually(() => atHead('routing', last), 30_000);
      expect(seen).toEqual([]);
      expect(counts.transactions).toBe(0);
      // every event was handed back by a read at most once: nothing is read again
      expect(counts.eventsRead).toBeLessThanOrEqual(options.filter ? 300 : 0);
      const reads = counts.reads;
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(counts.eventsRead).toBeLessThanOrEqual(options.filter ? 300 : 0);
      expect(counts.reads).toBeGreaterThan(reads);
      await engine.journal.append('event:e1', [{ type: 'event.received', data: {} }]);
      await eventually(() => seen.length === 1);
      expect(seen).toEqual(['event:e1']);
      expect(counts.transactions).toBe(1);
    } finally {
      await sub.stop();
    }
  });

  it('keeps an ordered subscription blocked right before its failing event when passed-over events precede it, and moves on once it is skipped', async () => {
    await engine.journal.append(
      's',
      ['skip', 'a', 'skip', 'skip', 'poison', 'skip', 'b'].map((type) => ({ type, data: {} })),
    );
    const seen: string[] = [];
    const sub = await engine.subscribe(
      'strict',
      {
        ordered: true,
        maxAttempts: 2,
        backoff: { baseMs: 5, factor: 1, maxMs: 5, jitter: 0 },
        filter: (event) => event.type !== 'skip',
      },
      async (event) => {
        if (event.type === 'poison') throw new Error('nope');
        seen.push(event.type);
      },
    );
    await eventually(async () => (await engine.store.subscriptionGet({ name: 'strict' })).blockedReason ?? undefined);
    await sub.idle();
    expect(seen).toEqual(['a']);
    // the cursor sits just before the poison event: at the last event passed over before it
    const stored = await engine.store.subscriptionGet({ name: 'strict' });
    const [next] = (await engine.store.eventReadCommitted({ after: stored.cursor, limit: 1 })).events;
    expect(next?.event.type).toBe('poison');
    const [parked] = await engine.parked('strict');
    await engine.skipParked('strict', parked!.position);
    await eventually(() => seen.length === 2);
    expect(seen).toEqual(['a', 'b']);
  });
});
