import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDatabase } from '../../testing/databases.js';
import type { Store } from '../store.js';
import { openPostgresStore } from './store.js';

/** Batches travel as hand-written array literals and JSON arrays: every awkward string must survive. */
const AWKWARD = ['', 'NULL', 'null', '"quoted"', 'back\\slash', '\\"', '{braces}', 'a,b', ' spaced ', 'new\nline', 'ünïcödé ✓', '\u2028', "it's"];

describe('batch parameters on postgres', () => {
  let store: Store;
  beforeAll(async () => {
    store = await openPostgresStore(await createPostgresDatabase());
  });
  afterAll(async () => {
    await store.close();
  });

  it('round-trips awkward stream ids, types and data through an append', async () => {
    const appends = AWKWARD.map((text) => ({ streamId: `s-${text}`, events: [{ type: `t-${text}`, data: { text, list: [text] }, metadata: { correlationId: text } }] }));
    const { events } = await store.eventAppend({ appends });
    const read = await store.eventReadAll({});
    expect(read).toEqual(events);
    expect(read.map((e) => [e.streamId, e.type, e.data, e.metadata])).toEqual(AWKWARD.map((text) => [`s-${text}`, `t-${text}`, { text, list: [text] }, { correlationId: text }]));
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
    const claimed = await store.taskClaim({ queue: 'q', limit: 100, leaseMs: 60_000, workerId: 'w', leaseToken: 'L"\\' });
    expect(claimed.map((t) => t.payload)).toEqual(AWKWARD.map((text) => ({ text })));
    const done = await store.taskComplete({ items: claimed.map((t) => ({ id: t.id, leaseToken: 'L"\\', result: { echo: (t.payload as { text: string }).text } })) });
    expect(done.map((t) => t.id)).toEqual(claimed.map((t) => t.id));
    const stored = await Promise.all(claimed.map((t) => store.taskGet({ id: t.id })));
    expect(stored.map((t) => t.result)).toEqual(AWKWARD.map((text) => ({ echo: text })));
  });
});
