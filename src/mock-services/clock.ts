/**
 * The services' timers, scaled by `speed` (10 → ten times faster) and grouped by owner so a cancel
 * or a reset stops every pending transition of a resource at once.
 */
export interface Clock {
  readonly speed: number;
  /** Runs `fn` after `ms` of service time (`ms / speed` of real time). */
  after(owner: string, ms: number, fn: () => void): void;
  /** Real milliseconds that `ms` of service time take. */
  real(ms: number): number;
  /** Stops the pending timers of one owner. */
  cancel(owner: string): void;
  /** Stops every pending timer. */
  clear(): void;
}

export function createClock(speed: number): Clock {
  const timers = new Map<string, Set<NodeJS.Timeout>>();
  const real = (ms: number) => Math.max(0, Math.round(ms / speed));
  return {
    speed,
    real,
    after(owner, ms, fn) {
      const set = timers.get(owner) ?? new Set();
      timers.set(owner, set);
      const timer = setTimeout(() => {
        set.delete(timer);
        if (set.size === 0) timers.delete(owner);
        fn();
      }, real(ms));
      set.add(timer);
    },
    cancel(owner) {
      for (const timer of timers.get(owner) ?? []) clearTimeout(timer);
      timers.delete(owner);
    },
    clear() {
      for (const set of timers.values()) for (const timer of set) clearTimeout(timer);
      timers.clear();
    },
  };
}
