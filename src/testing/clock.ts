import type { SqliteClock } from '../storage/sqlite/store.js';

/**
 * A clock that stands still until the test moves it, for a SQLite store (`SqliteClock`): every
 * time the engine reads (leases, tasks' run-at, sleeps, timeouts, retries) is this one.
 *
 * @example
 * const clock = new TestClock(Date.parse('2030-01-01T00:00:00Z'));
 * clock.set(clock.now() + 86_400_000); // a day later: the store's workers are woken
 */
export class TestClock implements SqliteClock {
  private readonly wakes: Array<() => void> = [];

  constructor(private time: number) {}

  now(): number {
    return this.time;
  }

  onJump(wake: () => void): void {
    this.wakes.push(wake);
  }

  /** Moves the clock to `time` (ms since the epoch), never back: what a timer waits for cannot come twice. */
  set(time: number): void {
    if (time < this.time) throw new Error(`the test clock cannot go back (from ${this.time} to ${time})`);
    if (time === this.time) return;
    this.time = time;
    for (const wake of this.wakes) wake();
  }
}
