import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConflictError, LeaseLostError, ValidationError } from '../errors.js';
import { openStore } from '../storage/open.js';
import type { Lease, Store } from '../storage/store.js';
import { backends } from '../testing/backends.js';
import { EngineEvents } from '../observe/events.js';
import { Journal } from './journal.js';

const LIMITS = { maxEventBytes: 1000, maxEventsPerAppend: 1000 };

/** `store` counting its top-level transactions. */
function counted(store: Store): Store & { transactions: number } {
  const s = Object.create(store) as Store & { transactions: number };
  s.transactions = 0;
  s.transaction = (fn) => {
    s.transactions += 1;
    return store.transaction(fn);
  };
  return s;
}

describe.each(backends)('group commit on $name', (backend) => {
  let raw: Store;
  let store: Store & { transactions: number };
  let journal: Journal;
  beforeEach(async () => {
    raw = await openStore(await backend.create());
    store = counted(raw);
    journal = new Journal(store, LIMITS);
  });
  afterEach(() => raw.close());

  async function claim(n: number): Promise<Lease[]> {
    const tasks = Array.from({ length: n }, (_, i) => ({
      id: `t${i}`,
      queue: 'q',
      payload: null,
      idempotencyKey: null,
      orderingKey: null,
      runAt: null,
      priority: 0,
      maxAttempts: 3,
    }));
    await raw.taskEnqueue({ tasks });
    const claimed = await raw.taskClaim({
      queue: 'q',
      limit: n,
      leaseMs: 30_000,
      workerId: 'w',
      leaseToken: 'lease-1',
    });
    return claimed.map((t) => ({ id: t.id, leaseToken: t.leaseToken! }));
  }

  const events = (stream: string) => raw.eventReadStream({ streamId: stream });

  it('commits the writes of one turn in one transaction, each caller getting its own events', async () => {
    const leases = await claim(5);
    const before = store.transactions;
    const results = await Promise.all(
      leases.map((lease, i) =>
        journal.group.submit({
          leases: [lease],
          leaseMs: 30_000,
          appends: [
            {
              streamId: `run:${i}`,
              events: [
                { type: 'x', data: i },
                { type: 'y', data: i },
              ],
            },
          ],
        }),
      ),
    );
    expect(store.transactions - before).toBe(1);
    results.forEach((r, i) => {
      expect(r.events.map((e) => [e.streamId, e.version, e.type, e.data])).toEqual([
        [`run:${i}`, 1, 'x', i],
        [`run:${i}`, 2, 'y', i],
      ]);
    });
    for (let i = 0; i < 5; i++) expect(await events(`run:${i}`)).toHaveLength(2);
  });

  it('drops only the writes whose lease is gone: the others in the batch commit', async () => {
    const [held, other] = await claim(2);
    const stale = { id: other!.id, leaseToken: 'lease-of-someone-else' };
    const settled = await Promise.allSettled([
      journal.group.submit({ leases: [held!], appends: [{ streamId: 'run:held', events: [{ type: 'x', data: 1 }] }] }),
      journal.group.submit({
        leases: [stale],
        appends: [{ streamId: 'run:lost', events: [{ type: 'x', data: 2 }] }],
        also: async (tx) => void (await tx.projectionPut({ name: 'p', key: 'lost', value: 1 })),
      }),
      journal.group.submit({ appends: [{ streamId: 'run:free', events: [{ type: 'x', data: 3 }] }] }),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    expect(await events('run:held')).toHaveLength(1);
    expect(await events('run:lost')).toHaveLength(0);
    expect(await raw.projectionGet({ name: 'p', key: 'lost' })).toBeUndefined();
    expect(await events('run:free')).toHaveLength(1);
  });

  it('reports each committed batch as store:batch: the writes it committed and the events they appended', async () => {
    const engineEvents = new EngineEvents();
    const batches: Array<{ writes: number; events: number }> = [];
    engineEvents.on('store:batch', (e) => void batches.push(e));
    const reporting = new Journal(store, LIMITS, engineEvents);
    const [a, b, c] = await claim(3);
    const stale = { id: c!.id, leaseToken: 'lease-of-someone-else' };
    const two = [
      { type: 'x', data: 1 },
      { type: 'y', data: 2 },
    ];
    await Promise.allSettled([
      reporting.group.submit({ leases: [a!], appends: [{ streamId: 'run:a', events: two }] }),
      reporting.group.submit({
        leases: [b!],
        appends: [
          { streamId: 'run:b', events: two },
          { streamId: 'run:b2', events: [{ type: 'z', data: 3 }] },
        ],
      }),
      reporting.group.submit({ leases: [stale], appends: [{ streamId: 'run:c', events: two }] }),
      reporting.group.submit({ completes: [{ ...a!, result: null }] }),
    ]);
    // the stale write was fenced out: it is not counted; a completion is a write without events
    expect(batches).toEqual([{ writes: 3, events: 5 }]);
    await reporting.group.submit({ appends: [{ streamId: 'run:d', events: [{ type: 'x', data: 4 }] }] });
    expect(batches).toEqual([
      { writes: 3, events: 5 },
      { writes: 1, events: 1 },
    ]);
  });

  it('tells a stale lease from the current one of the same task in one batch', async () => {
    // the run's task was taken over (new token) while the pass holding the old token still writes
    await raw.taskEnqueue({
      tasks: [
        {
          id: 'same',
          queue: 'same',
          payload: null,
          idempotencyKey: null,
          orderingKey: null,
          runAt: null,
          priority: 0,
          maxAttempts: 3,
        },
      ],
    });
    const [first] = await raw.taskClaim({
      queue: 'same',
      limit: 1,
      leaseMs: 30_000,
      workerId: 'w1',
      leaseToken: 'old',
    });
    await raw.taskFail({ id: first!.id, leaseToken: 'old', error: 'stalled', retryDelayMs: 0 });
    await raw.taskClaim({ queue: 'same', limit: 1, leaseMs: 30_000, workerId: 'w2', leaseToken: 'new' });
    const stale = { id: 'same', leaseToken: 'old' };
    const current = { id: 'same', leaseToken: 'new' };
    const writes = await Promise.allSettled([
      journal.group.submit({ leases: [stale], appends: [{ streamId: 'run:stale', events: [{ type: 'x', data: 1 }] }] }),
      journal.group.submit({
        leases: [current],
        appends: [{ streamId: 'run:current', events: [{ type: 'x', data: 2 }] }],
      }),
    ]);
    expect(writes.map((w) => w.status)).toEqual(['rejected', 'fulfilled']);
    expect(await events('run:stale')).toHaveLength(0);
    const completions = await Promise.allSettled([
      journal.group.submit({
        completes: [{ ...current, result: 'new' }],
        appends: [{ streamId: 'run:new', events: [{ type: 'x', data: 'new' }] }],
      }),
      journal.group.submit({
        completes: [{ ...stale, result: 'old' }],
        appends: [{ streamId: 'run:old', events: [{ type: 'x', data: 'old' }] }],
      }),
    ]);
    expect(completions.map((c) => c.status)).toEqual(['fulfilled', 'rejected']);
    expect(await events('run:old')).toHaveLength(0);
    // the store journals the completion with the row: once, by the current attempt's worker
    expect((await events('task:same')).map((e) => e.data)).toEqual([
      expect.objectContaining({ state: 'ready' }),
      expect.objectContaining({ state: 'completed', attempt: 2, workerId: 'w2' }),
    ]);
    expect((await raw.taskGet({ id: 'same' })).result).toBe('new');
  });

  it('completes the tasks still held in one statement; a completion whose task was lost writes nothing', async () => {
    const [a, b] = await claim(2);
    await raw.taskFail({ ...b!, error: 'gone', retryDelayMs: 0 });
    const settled = await Promise.allSettled([
      journal.group.submit({
        completes: [{ ...a!, result: 'A' }],
        appends: [{ streamId: `task:${a!.id}`, events: [{ type: 'task.completed', data: {} }] }],
      }),
      journal.group.submit({
        completes: [{ ...b!, result: 'B' }],
        appends: [{ streamId: `task:${b!.id}`, events: [{ type: 'task.completed', data: {} }] }],
      }),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected']);
    expect((await raw.taskGet({ id: a!.id })).state).toBe('completed');
    expect((await raw.taskGet({ id: a!.id })).result).toBe('A');
    expect((await raw.taskGet({ id: b!.id })).state).toBe('ready');
    expect((await events(`task:${b!.id}`)).map((e) => e.type)).toEqual(['task.enqueued']);
  });

  it('fails only the caller whose write cannot commit: the rest of its batch is tried again and commits', async () => {
    await raw.eventAppend({ appends: [{ streamId: 'exists', events: [{ type: 'x', data: 0 }] }] });
    const settled = await Promise.allSettled([
      journal.group.submit({ appends: [{ streamId: 'run:a', events: [{ type: 'x', data: 1 }] }] }),
      journal.group.submit({ appends: [{ streamId: 'run:big', events: [{ type: 'x', data: 'x'.repeat(2000) }] }] }),
      journal.group.submit({
        appends: [{ streamId: 'run:b', events: [{ type: 'x', data: 2 }] }],
        also: (tx) => journal.append('exists', [{ type: 'y', data: 1 }], { tx, expectedVersion: 0 }),
      }),
      journal.group.submit({ appends: [{ streamId: 'run:c', events: [{ type: 'x', data: 3 }] }] }),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toBeInstanceOf(ValidationError);
    expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
    expect(await events('run:a')).toHaveLength(1);
    expect(await events('run:big')).toHaveLength(0);
    expect(await events('run:b')).toHaveLength(0);
    expect(await events('exists')).toHaveLength(1);
    expect(await events('run:c')).toHaveLength(1);
  });

  it('runs the prepare of a write before the append and journals what it found, in the same transaction', async () => {
    await claim(0);
    await raw.taskEnqueue({
      tasks: [
        {
          id: 'p1',
          queue: 'prep',
          payload: null,
          idempotencyKey: null,
          orderingKey: null,
          runAt: null,
          priority: 0,
          maxAttempts: 3,
        },
      ],
    });
    const before = store.transactions;
    const [claimed, other] = await Promise.all([
      journal.group.submit({
        prepare: async (tx) => {
          const tasks = await tx.taskClaim({
            queue: 'prep',
            limit: 5,
            leaseMs: 30_000,
            workerId: 'w',
            leaseToken: 'lease-p',
          });
          return {
            appends: tasks.map((t) => ({ streamId: `task:${t.id}`, events: [{ type: 'task.claimed', data: {} }] })),
            value: tasks.map((t) => t.id),
          };
        },
      }),
      journal.group.submit({ appends: [{ streamId: 'run:other', events: [{ type: 'x', data: 1 }] }] }),
    ]);
    expect(store.transactions - before).toBe(1);
    expect(claimed.value).toEqual(['p1']);
    expect(claimed.events.map((e) => [e.streamId, e.type])).toEqual([['task:p1', 'task.claimed']]);
    expect(other.events).toHaveLength(1);
    expect((await raw.taskGet({ id: 'p1' })).state).toBe('running');
  });

  it('keeps a batch within the journal limit of events per append: more writes take more batches, none fails', async () => {
    const before = store.transactions;
    const writes = Array.from({ length: 30 }, (_, i) =>
      journal.group.submit({
        appends: [{ streamId: `run:big${i}`, events: Array.from({ length: 50 }, (_, j) => ({ type: 'x', data: j })) }],
      }),
    );
    await Promise.all(writes);
    // 1,500 events, at most half the limit of 1,000 per batch: 3 batches of 10 writes
    expect(store.transactions - before).toBe(3);
    for (let i = 0; i < 30; i += 7) expect(await events(`run:big${i}`)).toHaveLength(50);
  });

  it('shares a crowd of waiting events out among batches on PostgreSQL; SQLite commits it in one', async () => {
    const engineEvents = new EngineEvents();
    const batches: Array<{ writes: number; events: number }> = [];
    engineEvents.on('store:batch', (e) => void batches.push(e));
    const reporting = new Journal(store, LIMITS, engineEvents);
    const two = (i: number) => [
      { type: 'x', data: i },
      { type: 'y', data: i },
    ];
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        reporting.group.submit({ appends: [{ streamId: `run:crowd${i}`, events: two(i) }] }),
      ),
    );
    if (backend.name === 'sqlite') expect(batches).toEqual([{ writes: 100, events: 200 }]);
    else {
      // 200 events waiting, three lanes open: at most a third of them (67) in a batch
      expect(batches.length).toBeGreaterThanOrEqual(3);
      expect(Math.max(...batches.map((b) => b.events))).toBeLessThanOrEqual(68);
    }
    expect(batches.reduce((sum, b) => sum + b.writes, 0)).toBe(100);
    // each caller its own events
    expect(
      results.every((r, i) => r.events.length === 2 && r.events.every((e) => e.streamId === `run:crowd${i}`)),
    ).toBe(true);
  });

  it('gathers the writes that arrive while a commit is in flight into the next one', async () => {
    const first = journal.group.submit({ appends: [{ streamId: 'run:first', events: [{ type: 'x', data: 0 }] }] });
    await new Promise((resolve) => setImmediate(resolve));
    // the first commit is in flight now: these wait for it, then share one transaction
    const before = store.transactions;
    const later = Array.from({ length: 10 }, (_, i) =>
      journal.group.submit({ appends: [{ streamId: `run:later${i}`, events: [{ type: 'x', data: i }] }] }),
    );
    await Promise.all([first, ...later]);
    expect(store.transactions - before).toBe(1);
  });

  it('runs a statement alone in its batch on its own, outside a transaction, and in the batch transaction beside other writes', async () => {
    await raw.taskEnqueue({
      tasks: ['s1', 's2'].map((id) => ({
        id,
        queue: 's',
        payload: null,
        idempotencyKey: null,
        orderingKey: null,
        runAt: null,
        priority: 0,
        maxAttempts: 3,
      })),
    });
    const claim = (token: string) => (tx: Store) =>
      tx.taskClaim({ queue: 's', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: token });
    const before = store.transactions;
    const alone = await journal.group.submit({ statement: claim('alone') });
    expect(store.transactions - before).toBe(0);
    expect(alone.value.map((t) => t.leaseToken)).toEqual(['alone']);
    const [shared] = await Promise.all([
      journal.group.submit({ statement: claim('shared') }),
      journal.group.submit({ appends: [{ streamId: 'run:beside', events: [{ type: 'x', data: 1 }] }] }),
    ]);
    expect(store.transactions - before).toBe(1);
    expect(shared.value.map((t) => t.leaseToken)).toEqual(['shared']);
    expect((await raw.taskList({ queue: 's', state: 'running', limit: 10 })).map((t) => t.leaseToken).sort()).toEqual([
      'alone',
      'shared',
    ]);
  });

  it('commits projected appends made without a transaction together on SQLite, each in its own on PostgreSQL; a conflict fails only its caller', async () => {
    journal.project('note', async (event, tx) =>
      tx.projectionPut({ name: 'notes', key: event.streamId, value: event.data }),
    );
    await journal.append('taken', [{ type: 'note', data: 0 }]);
    const before = store.transactions;
    const settled = await Promise.allSettled([
      ...Array.from({ length: 5 }, (_, i) => journal.append(`note:${i}`, [{ type: 'note', data: i }])),
      journal.append('taken', [{ type: 'note', data: 1 }], { expectedVersion: 0 }),
    ]);
    expect(settled.map((s) => s.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
    ]);
    expect((settled[5] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
    // SQLite: the batch of six, undone by the conflict, then each alone; PostgreSQL: six of their own
    expect(store.transactions - before).toBe(backend.name === 'sqlite' ? 7 : 6);
    for (let i = 0; i < 5; i++) expect(await raw.projectionGet({ name: 'notes', key: `note:${i}` })).toBe(i);
    expect(await events('taken')).toHaveLength(1);
    const after = store.transactions;
    await Promise.all(
      Array.from({ length: 5 }, (_, i) => journal.append(`note:${i}`, [{ type: 'note', data: i + 10 }])),
    );
    expect(store.transactions - after).toBe(backend.name === 'sqlite' ? 1 : 5);
  });
});
