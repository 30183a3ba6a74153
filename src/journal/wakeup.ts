import type { Store } from '../storage/store.js';
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

/**
 * Wake-ups from `store.listen('events')` for the streams `match` accepts (and for '', "anything
 * may have changed"). Listening starts before this resolves, so a commit after it is never missed;
 * one that arrives while nobody waits is kept by the Wakeup.
 *
 * @example const w = await watchEvents(store, (s) => s === 'run:r1'); await w.wakeup.wait(5000); await w.stop();
 */
export async function watchEvents(
  store: Store,
  match: (streamId: string) => boolean,
): Promise<{ wakeup: Wakeup; stop: () => Promise<void> }> {
  const wakeup = new Wakeup();
  const unlisten = await store.listen('events', (payload) => {
    if (payload === '' || match(payload)) wakeup.wake();
  });
  let stopped = false;
  return {
    wakeup,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await unlisten();
    },
  };
}
