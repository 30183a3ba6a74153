import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { TerminalError } from '../errors.js';
import { PASS_OVER } from './subscription.js';
import type { StoredEvent } from '../storage/store.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';

const fastRetry = { maxAttempts: 3, backoff: { baseMs: 5, factor: 1, maxMs: 5, jitter: 0 } };

describe.each(backends)('subscriptions on $name', (backend) => {
  let engine: Engine;
  let second: () => Promise<Engine>;
  let close: () => Promise<void>;
  beforeEach(async () => ({ engine, second, close } = await testEngine(backend)));
  afterEach(() => close());

  const append = (streamId: string, ...types: string[]) =>
    engine.journal.append(
      streamId,
      types.map((type) => ({ type, data: { type } })),
    );

  it('delivers every matching event once, in order, and commits handler writes with the cursor', async () => {
    await append('chan:a', 'm1', 'm2');
    await append('other', 'x');
    const seen: string[] = [];
    const sub = await engine.subscribe('copy', { streamPrefix: 'chan:' }, async (event, { tx }) => {
      seen.push(event.type);
      await tx.projectionPut({ name: 'copy', key: String(event.position), value: event.type });
    });
    await append('chan:b', 'm3');
    await eventually(() => seen.length === 3);
    await sub.idle();
    expect(seen).toEqual(['m1', 'm2', 'm3']);
    const cursor = (await engine.store.subscriptionGet({ name: 'copy' })).cursor;
    expect(cursor).not.toBe('');
    await sub.stop();
    const again: string[] = [];
    const resumed = await engine.subscribe(
      'copy',
      { streamPrefix: 'chan:' },
      async (event) => void again.push(event.type),
    );
    await append('chan:a', 'm4');
    await eventually(() => again.length === 1);
    await resumed.idle();
    expect(again).toEqual(['m4']);
  });

  it('rolls back the handler writes of a failed attempt: internal effects happen exactly once', async () => {
    await append('s', 'e1');
    let attempts = 0;
    const sub = await engine.subscribe('count', fastRetry, async (_event, { tx }) => {
      const n = ((await tx.projectionGet({ name: 'count', key: 'n' })) as number | undefined) ?? 0;
      await tx.projectionPut({ name: 'count', key: 'n', value: n + 1 });
      if (++attempts < 3) throw new Error('flaky');
    });
    await eventually(() => attempts === 3);
    await sub.idle();
    expect(await engine.store.projectionGet({ name: 'count', key: 'n' })).toBe(1);
  });

  it('parks an event that keeps failing, moves on, and redelivers it when an operator asks', async () => {
    await append('s', 'good1', 'bad', 'good2');
    let fixed = false;
    const seen: string[] = [];
    const sub = await engine.subscribe('parking', fastRetry, async (event) => {
      if (event.type === 'bad' && !fixed) throw new Error('cannot handle bad');
      seen.push(event.type);
    });
    await eventually(() => seen.length === 2);
    await sub.idle();
    expect(seen).toEqual(['good1', 'good2']);
    const [parked] = await engine.parked('parking');
    expect(parked).toMatchObject({ status: 'parked', attempts: 3, error: 'Error: cannot handle bad' });
    expect(parked?.event.type).toBe('bad');
    fixed = true;
    await engine.retryParked('parking', parked!.position);
    await eventually(() => seen.includes('bad'));
    await sub.idle();
    expect((await engine.parked('parking'))[0]?.status).toBe('resolved');
  });

  it('blocks an ordered subscription on a failing event and says so, until it is skipped', async () => {
    await append('s', 'a', 'poison', 'b');
    const seen: string[] = [];
    const sub = await engine.subscribe('strict', { ...fastRetry, ordered: true }, async (event) => {
      if (event.type === 'poison') throw new Error('nope');
      seen.push(event.type);
    });
    const blocked = await eventually(
      async () => (await engine.store.subscriptionGet({ name: 'strict' })).blockedReason ?? undefined,
    );
    expect(blocked).toMatch(/\(poison\) failed 3 times: Error: nope/);
    await sub.idle();
    expect(seen).toEqual(['a']);
    const [parked] = await engine.parked('strict');
    await engine.skipParked('strict', parked!.position);
    await eventually(() => seen.length === 2);
    expect(seen).toEqual(['a', 'b']);
    expect((await engine.store.subscriptionGet({ name: 'strict' })).blockedReason).toBeNull();
  });

  it('retries the blocking event of an ordered subscription on request', async () => {
    await append('s', 'a', 'poison', 'b');
    let healthy = false;
    const seen: string[] = [];
    await engine.subscribe('strict', { ...fastRetry, ordered: true }, async (event) => {
      if (event.type === 'poison' && !healthy) throw new Error('down');
      seen.push(event.type);
    });
    const [parked] = await eventually(async () => {
      const list = await engine.parked('strict');
      return list.length > 0 ? list : undefined;
    });
    healthy = true;
    await engine.retryParked('strict', parked!.position);
    await eventually(() => seen.length === 3);
    expect(seen).toEqual(['a', 'poison', 'b']);
  });

  it('is held by one process at a time, and another takes over when it stops', async () => {
    const other = await second();
    const byA: string[] = [];
    const byB: string[] = [];
    const a = await engine.subscribe('shared', {}, async (e) => void byA.push(e.type));
    await append('s', 'e1', 'e2');
    await eventually(() => byA.length === 2);
    const b = await other.subscribe('shared', {}, async (e) => void byB.push(e.type));
    await append('s', 'e3');
    await eventually(() => byA.length === 3);
    await b.idle();
    expect(byB).toEqual([]);
    await a.stop();
    await append('s', 'e4');
    await eventually(() => byB.length === 1);
    expect([...byA, ...byB]).toEqual(['e1', 'e2', 'e3', 'e4']);
  });

  it('wakes on a commit from another process without waiting for the poll', async () => {
    const other = await second();
    const seen: StoredEvent[] = [];
    const sub = await engine.subscribe('live', { pollMs: 60_000 }, async (e) => void seen.push(e));
    await sub.idle();
    const started = Date.now();
    await other.journal.append('s', [{ type: 'ping', data: {} }]);
    await eventually(() => seen.length === 1, 5_000);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('never skips an event whose transaction commits after a later one', async () => {
    const other = await second();
    const seen: string[] = [];
    await engine.subscribe('gapless', { pollMs: 20 }, async (e) => void seen.push(e.type));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let appended!: () => void;
    const slowAppended = new Promise<void>((resolve) => (appended = resolve));
    const slow = other.store.transaction(async (tx) => {
      await other.journal.append('slow', [{ type: 'A', data: {} }], { tx });
      appended();
      await gate;
    });
    await slowAppended;
    const fast = engine.journal.append('fast', [{ type: 'B', data: {} }]);
    await Promise.race([fast, new Promise((resolve) => setTimeout(resolve, 300))]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    await Promise.all([slow, fast]);
    await eventually(() => seen.length === 2);
    expect(seen.sort()).toEqual(['A', 'B']);
  });

  it('passes over filtered events, hands prepared work to the handler, and parks a TerminalError at once', async () => {
    await append('chan:a', 'keep', 'drop', 'keep', 'fatal');
    const seen: unknown[] = [];
    let prepares = 0;
    const sub = await engine.subscribe(
      'prep',
      {
        streamPrefix: 'chan:',
        maxAttempts: 5,
        backoff: fastRetry.backoff,
        filter: (event) => event.type !== 'drop',
        // outside the transaction: a write through the store here would wait on it if it were open
        prepare: async (event) => {
          prepares++;
          await engine.store.projectionPut({ name: 'prepared', key: String(event.position), value: event.type });
          return `prepared ${event.type}`;
        },
      },
      async (event, { prepared }) => {
        if (event.type === 'fatal') throw new TerminalError('no point retrying');
        seen.push(prepared);
      },
    );
    await eventually(async () => (await engine.parked('prep')).length === 1);
    await sub.idle();
    expect(seen).toEqual(['prepared keep', 'prepared keep']);
    expect(prepares).toBe(3);
    const [parked] = await engine.parked('prep');
    expect(parked).toMatchObject({ error: 'TerminalError: no point retrying', event: { type: 'fatal' } });
  });

  it('passes over an event its prepare has nothing to do for: no handler call, the cursor moves past it', async () => {
    await append('s', 'a', 'nothing', 'b', 'nothing');
    const seen: string[] = [];
    const prepared: string[] = [];
    const options = {
      ordered: true,
      prepare: async (event: StoredEvent) => (prepared.push(event.type), event.type === 'nothing' ? PASS_OVER : 1),
    };
    const sub = await engine.subscribe('skip', options, async (event) => void seen.push(event.type));
    await eventually(() => prepared.length === 4);
    await sub.idle();
    expect(seen).toEqual(['a', 'b']);
    const head = (await engine.store.eventReadCommitted({ after: '', limit: 10 })).cursor;
    expect((await engine.store.subscriptionGet({ name: 'skip' })).cursor).toBe(head);
    await sub.stop();
    const again = await engine.subscribe('skip', options, async (event) => void seen.push(event.type));
    await again.idle();
    expect(prepared).toHaveLength(4);
  });

  it('does not count failures of the database being away as attempts: the event is delivered once it is back, not parked', async () => {
    await append('s', 'e1');
    let calls = 0;
    const seen: number[] = [];
    const sub = await engine.subscribe('outage', fastRetry, async (_event, { attempt }) => {
      // what a PostgreSQL client throws while the server restarts, more times than maxAttempts
      if (++calls <= fastRetry.maxAttempts + 2)
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      seen.push(attempt);
    });
    await eventually(() => seen.length === 1);
    await sub.idle();
    expect(seen).toEqual([1]);
    expect(await engine.parked('outage')).toEqual([]);
  });
});
