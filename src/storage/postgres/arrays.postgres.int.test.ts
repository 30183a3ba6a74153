import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDatabase } from '../../testing/databases.js';
import type { Store } from '../store.js';
import { openPostgresStore } from './store.js';

/**
 * Batches travel as hand-written array literals and JSON arrays, and a transaction's first statement
 * and its writes as literals in a message of several statements: every awkward string must survive.
 */
const AWKWARD = [
  '',
  'NULL',
  'null',
  '"quoted"',
  'back\\slash',
  '\\"',
  '{braces}',
  'a,b',
  ' spaced ',
  'new\nline',
  'ünïcödé ✓',
  '\u2028',
  "it's",
  "'); DROP TABLE events; --",
  '$1',
  "E'x'",
];

describe('batch parameters on postgres', () => {
  let store: Store;
  beforeAll(async () => {
    store = await openPostgresStore(await createPostgresDatabase());
  });
  afterAll(async () => {
    await store.close();
  });

  it('round-trips awkward stream ids, types and data through an append', async () => {
    const appends = AWKWARD.map((text) => ({
      streamId: `s-${text}`,
      events: [{ type: `t-${text}`, data: { text, list: [text] }, metadata: { correlationId: text } }],
    }));
    const { events } = await store.eventAppend({ appends });
    const read = await store.eventReadAll({});
    expect(read).toEqual(events);
    expect(read.map((e) => [e.streamId, e.type, e.data, e.metadata])).toEqual(
      AWKWARD.map((text) => [`s-${text}`, `t-${text}`, { text, list: [text] }, { correlationId: text }]),
    );
  });

  it('round-trips awkward ids, keys and payloads through an enqueue and a completion', async () => {
    const tasks = AWKWARD.map((text, i) => ({
      id: `task-${i}-${text}`,
      queue: 'q',
      payload: { text },
      idempotencyKey: `key-${text}`,
      orderingKey: null,
      runAt: null,
      priority: 0,
      maxAttempts: 1,
    }));
    const created = await store.taskEnqueue({ tasks });
    expect(created.every((r) => r.created)).toBe(true);
    const again = await store.taskEnqueue({ tasks: tasks.map((t) => ({ ...t, id: `${t.id}-again` })) });
    expect(again.map((r) => r.task)).toEqual(created.map((r) => r.task));
    const claimed = await store.taskClaim({
      queue: 'q',
      limit: 100,
      leaseMs: 60_000,
      workerId: 'w',
      leaseToken: 'L"\\',
    });
    expect(claimed.map((t) => t.payload)).toEqual(AWKWARD.map((text) => ({ text })));
    const done = await store.taskComplete({
      items: claimed.map((t) => ({
        id: t.id,
        leaseToken: 'L"\\',
        result: { echo: (t.payload as { text: string }).text },
      })),
    });
    expect(done.map((t) => t.id)).toEqual(claimed.map((t) => t.id));
    const stored = await Promise.all(claimed.map((t) => store.taskGet({ id: t.id })));
    expect(stored.map((t) => t.result)).toEqual(AWKWARD.map((text) => ({ echo: text })));
  });

  it('round-trips awkward keys and values through writes that travel with the next statement or the commit', async () => {
    await store.transaction(async (tx) => {
      await tx.projectionPutMany({
        name: 'awkward',
        rows: AWKWARD.map((text) => ({ key: `k-${text}`, value: { text } })),
      });
      // read in the same message as the write before it
      expect(await tx.projectionGet({ name: 'awkward', key: `k-${AWKWARD[3]}` })).toEqual({ text: AWKWARD[3] });
      await tx.projectionPutMany({
        name: 'awkward',
        rows: AWKWARD.map((text) => ({ key: `later-${text}`, value: { text } })),
      });
    });
    const rows = await store.projectionGetMany({
      name: 'awkward',
      keys: AWKWARD.flatMap((text) => [`k-${text}`, `later-${text}`]),
    });
    const values = new Map(rows.map((r) => [r.key, r.value]));
    for (const text of AWKWARD)
      expect([values.get(`k-${text}`), values.get(`later-${text}`)]).toEqual([{ text }, { text }]);
    expect(rows).toHaveLength(2 * AWKWARD.length);
  });

  it('fails the commit of a transaction whose last write fails, and keeps none of it', async () => {
    await expect(
      store.transaction(async (tx) => {
        await tx.projectionPut({ name: 'atomic', key: 'first', value: 1 });
        // jsonb refuses \u0000: the write is sent with the COMMIT, which fails with it
        await tx.projectionPutMany({ name: 'atomic', rows: [{ key: 'bad', value: { nul: '\u0000' } }] });
      }),
    ).rejects.toThrow(/unsupported Unicode escape/);
    expect(await store.projectionGet({ name: 'atomic', key: 'first' })).toBeUndefined();
  });
});
