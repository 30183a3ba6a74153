import { afterEach, describe, expect, it } from 'vitest';
import { StoreClock } from '../runtime/pass/clock.js';
import { task } from '../storage/conformance-rows.js';
import { openSqliteStore } from '../storage/sqlite/store.js';
import type { Store } from '../storage/store.js';
import { TestClock } from './clock.js';

// A SQLite store on a test's clock: SQLite only, as the clock is the one this process keeps.

const START = Date.parse('2030-01-01T00:00:00Z');
const claim = (store: Store) =>
  store.taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: `lease_${Math.random()}` });

let store: Store | null = null;
afterEach(async () => {
  await store?.close();
  store = null;
});

describe('a SQLite store on a TestClock', () => {
  it('reads its time from the clock: now, run-at, due-in and leases', async () => {
    const clock = new TestClock(START);
    store = openSqliteStore(':memory:', { clock });
    expect(await store.now()).toBe(START);
    expect(store.clock?.()).toBe(START);
    await store.taskEnqueue({ tasks: [task('q', { runAt: START + 60_000 })] });
    expect(await claim(store)).toEqual([]);
    expect(await store.taskDueIn({ queue: 'q' })).toBe(60_000);
    clock.set(START + 60_000);
    const [claimed] = await claim(store);
    expect(claimed?.leaseExpiresAt).toBe(START + 90_000);
  });

  it("wakes the store's task listeners when it moves, and only then", async () => {
    const clock = new TestClock(START);
    store = openSqliteStore(':memory:', { clock });
    const woken: string[] = [];
    await store.listen('tasks', (queue) => woken.push(queue));
    clock.set(START);
    await new Promise((resolve) => setImmediate(resolve));
    expect(woken).toEqual([]);
    clock.set(START + 1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(woken).toEqual(['']);
    expect(() => clock.set(START)).toThrow(/cannot go back/);
  });

  it('is what StoreClock reads, at once after a jump (no offset to learn again)', async () => {
    const clock = new TestClock(START);
    store = openSqliteStore(':memory:', { clock });
    const storeClock = new StoreClock(store);
    await storeClock.ready();
    expect(storeClock.now()).toBe(START);
    clock.set(START + 30 * 86_400_000);
    expect(storeClock.now()).toBe(START + 30 * 86_400_000);
  });

  it('is the process clock when none is given', async () => {
    store = openSqliteStore(':memory:');
    const before = Date.now();
    const now = await store.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
