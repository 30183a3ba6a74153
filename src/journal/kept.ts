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
 *
 * A view past 30 s is let go, also when nothing is kept after it: an idle process held its last
 * 1,000 run views for good, none of them usable (2.9 MB for 10,000 runs of a 3-step workflow, and
 * up to 256 KiB per step output inline in a view).
 */
export class KeptViews<V> {
  private readonly views = new Map<string, { version: number; view: V; at: number }>();
  private sweep: NodeJS.Timeout | undefined;

  /** Views kept now. */
  get size(): number {
    return this.views.size;
  }

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
    this.sweep ??= setTimeout(() => this.expire(), MAX_AGE_MS).unref();
  }

  /** Lets go of the views past MAX_AGE_MS (the oldest come first: `keep` puts a view last), and looks again when the next one will be. */
  private expire(): void {
    this.sweep = undefined;
    const now = performance.now();
    for (const [key, kept] of this.views) {
      const left = kept.at + MAX_AGE_MS - now;
      if (left > 0) {
        this.sweep = setTimeout(() => this.expire(), left).unref();
        return;
      }
      this.views.delete(key);
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
