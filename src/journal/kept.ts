import type { Store } from '../storage/store.js';

/** Views kept between transactions (the most recently written last to go), and for how long (ms). */
const LIMIT = 1_000;
const MAX_AGE_MS = 30_000;

/**
 * The views a projection wrote, kept once their transaction committed, each with the version of
 * its stream's last event: the next append to the stream, when its first event is the one after
 * (nobody else appended meanwhile; versions have no gaps), takes the kept view instead of reading
 * it. Any other version reads the view, as does a transaction that rolled back (its views are never
 * kept). Kept 30 s at most: a stream deleted by retention and started again under its id by
 * another process could otherwise reach the kept version.
 */
export class KeptViews<V> {
  private readonly views = new Map<string, { version: number; view: V; at: number }>();

  /** The view kept at `version`, taken out (it is changed in place, kept again only once that commits); undefined: read it. */
  take(key: string, version: number): V | undefined {
    const view = this.peek(key, version);
    this.views.delete(key);
    return view;
  }

  /** The view kept at `version`, left in place (a reader must not change it). */
  peek(key: string, version: number): V | undefined {
    const kept = this.views.get(key);
    return kept && kept.version === version && performance.now() - kept.at < MAX_AGE_MS ? kept.view : undefined;
  }

  /** Keeps `view` as of `version`: call it once the transaction that wrote it has committed. */
  keep(key: string, version: number, view: V): void {
    this.views.delete(key);
    this.views.set(key, { version, view, at: performance.now() });
    for (const old of this.views.keys()) {
      if (this.views.size <= LIMIT) break;
      this.views.delete(old);
    }
  }
}

/**
 * A projection's views by key, each as of its stream's version: those a transaction wrote (its
 * next event of the stream takes it), and once it committed, those kept (`KeptViews`).
 */
export class WrittenViews<V> {
  private readonly kept = new KeptViews<V>();
  private readonly written = new WeakMap<Store, Map<string, { version: number; view: V }>>();

  /** The view as of `version`: this transaction's, or one kept; undefined: read it. */
  take(tx: Store, key: string, version: number): V | undefined {
    const mine = this.written.get(tx)?.get(key);
    return mine?.version === version ? mine.view : this.kept.take(key, version);
  }

  /** `view` was written in `tx` as of `version`: kept once `tx` commits. */
  wrote(tx: Store, key: string, version: number, view: V): void {
    let mine = this.written.get(tx);
    if (!mine) {
      const views = new Map<string, { version: number; view: V }>();
      mine = views;
      this.written.set(tx, views);
      tx.onCommit(() => {
        for (const [k, v] of views) this.kept.keep(k, v.version, v.view);
      });
    }
    mine.set(key, { version, view });
  }
}
