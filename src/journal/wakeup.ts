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

  wait(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(0, ms));
      const self = this;
      function done() {
        clearTimeout(timer);
        self.waiter = null;
        resolve();
      }
      this.waiter = done;
    });
  }
}
