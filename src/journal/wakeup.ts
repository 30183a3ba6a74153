/**
 * A sleep that a notification cuts short. A wake-up that arrives while nobody waits is kept, so
 * one that lands between "found nothing" and "start waiting" is not lost.
 */
export class Wakeup {
  private pending = false;
  private waiter: (() => void) | null = null;

  wake(): void {
    if (this.waiter) this.waiter();
    else this.pending = true;
  }

  /** Resolves true when woken, false when `ms` ran out. */
  wait(ms: number): Promise<boolean> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(false), Math.max(0, ms));
      const done = (woken: boolean) => {
        clearTimeout(timer);
        this.waiter = null;
        resolve(woken);
      };
      this.waiter = () => done(true);
    });
  }
}
