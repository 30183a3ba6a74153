/** Failed authentications an address may make in one window before it is slowed down. */
export const MAX_FAILURES = 10;
export const FAILURE_WINDOW_MS = 60_000;
/** Addresses tracked at most; past it, the windows already over are dropped. */
const MAX_ADDRESSES = 10_000;

/**
 * Counts failed authentications (a key presented and refused) per client address in fixed windows.
 * Past MAX_FAILURES in a window the address is refused (429, Retry-After) until the window ends,
 * whatever key it shows, so guessing keys costs a minute per ten guesses. `onThrottle` is told once per window.
 *
 * @example const failures = new FailedLogins((address, failures) => log(address, failures));
 */
export class FailedLogins {
  private readonly windows = new Map<string, { start: number; failures: number; told: boolean }>();

  constructor(
    private readonly onThrottle: (address: string, failures: number) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds until `address` may try again, or 0 when it may now. */
  retryAfter(address: string): number {
    const w = this.windows.get(address);
    if (!w || w.failures <= MAX_FAILURES) return 0;
    const left = w.start + FAILURE_WINDOW_MS - this.now();
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  fail(address: string): void {
    const now = this.now();
    let w = this.windows.get(address);
    if (!w || now >= w.start + FAILURE_WINDOW_MS) {
      if (this.windows.size >= MAX_ADDRESSES) this.sweep(now);
      w = { start: now, failures: 0, told: false };
      this.windows.set(address, w);
    }
    w.failures++;
    if (w.failures > MAX_FAILURES && !w.told) {
      w.told = true;
      this.onThrottle(address, w.failures);
    }
  }

  private sweep(now: number): void {
    for (const [address, w] of this.windows) if (now >= w.start + FAILURE_WINDOW_MS) this.windows.delete(address);
    if (this.windows.size >= MAX_ADDRESSES) this.windows.clear();
  }
}
