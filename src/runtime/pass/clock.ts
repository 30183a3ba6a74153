import type { Store } from '../../storage/store.js';

/** How long a learned offset is trusted before it is learned again (a clock stepped by NTP is followed within this). */
export const CLOCK_REFRESH_MS = 5000;

/**
 * The database's clock, read without a query: this process's clock plus the offset between the
 * two, learned from `store.now()` and refreshed every few seconds. Leases and tasks' `runAt` are
 * compared on the database clock, so every timer a run computes (a sleep's end, a retry's time, a
 * wait's, a poll's or a run's deadline) is on it too; on the process clock, a worker whose clock
 * is off fires timers early or leaves them waiting (measured with libfaketime, before: a worker
 * 10 min behind ended a 3 s sleep after 46–323 ms, one 10 min ahead left its runs sleeping).
 * A store that keeps its clock in this process (`store.clock`: SQLite) is read directly: nothing
 * to learn, and a test's clock that jumps (runledger/testing) is followed at once.
 *
 * @example
 * const clock = new StoreClock(store);
 * await clock.ready(); // one query at most every few seconds
 * const wakeAt = clock.now() + 3000;
 */
export class StoreClock {
  private offset = 0;
  /** When the offset was learned, on this process's monotonic clock (which libfaketime and NTP steps leave alone). */
  private learnedAt: number | null = null;
  private learning: Promise<void> | null = null;

  constructor(
    private readonly store: Pick<Store, 'now' | 'clock'>,
    private readonly refreshMs = CLOCK_REFRESH_MS,
  ) {}

  /** Resolves once the offset is known and fresh: at once when it is, else after one `store.now()`. */
  async ready(): Promise<void> {
    if (this.store.clock) return;
    if (this.learnedAt === null || performance.now() - this.learnedAt > this.refreshMs) await this.learn();
  }

  /** The database's time now, in ms since the epoch. A stale offset is refreshed in the background. */
  now(): number {
    if (this.store.clock) return this.store.clock();
    if (this.learnedAt !== null && performance.now() - this.learnedAt > this.refreshMs) this.learn().catch(() => {});
    return Date.now() + this.offset;
  }

  /** The database clock minus this process's, in ms (0 until learned). */
  get offsetMs(): number {
    return this.store.clock ? this.store.clock() - Date.now() : this.offset;
  }

  private learn(): Promise<void> {
    this.learning ??= (async () => {
      const sent = Date.now();
      const started = performance.now();
      const database = await this.store.now();
      // the database read its clock about halfway through the round trip
      this.offset = Math.round(database - (sent + (performance.now() - started) / 2));
      this.learnedAt = performance.now();
    })().finally(() => (this.learning = null));
    return this.learning;
  }
}
