import { setTimeout as sleep } from 'node:timers/promises';
import { isTerminal, readRunView, RUN_VIEW, type RunStatus } from '../../src/runtime/read/view.js';
import { openStore } from '../../src/storage/open.js';
import type { Store } from '../../src/storage/store.js';

/** Versions of the run streams that were in flight at one moment. */
export type Snapshot = Map<string, number>;

/**
 * The scenario's own read-only look at the database, beside the engine's processes: run
 * statuses, and which runs were in flight when a fault struck and whether they moved since.
 * Reads that meet an outage are tried again.
 */
export class Watcher {
  private constructor(readonly store: Store) {}

  static async open(location: string): Promise<Watcher> {
    for (let attempt = 1; ; attempt++) {
      try {
        return new Watcher(await openStore(location));
      } catch (error) {
        if (attempt >= 30) throw error;
        await sleep(1000);
      }
    }
  }

  private async retry<T>(read: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await read();
      } catch (error) {
        if (attempt >= 60) throw error;
        await sleep(500);
      }
    }
  }

  /** A run's status (its view), or undefined when there is no such run. */
  async status(runId: string): Promise<RunStatus | undefined> {
    return (await this.retry(() => readRunView(this.store, runId)))?.status;
  }

  /** Polls until every run of `ids` has ended or `deadline` passed; returns the statuses seen last. */
  async settle(ids: Iterable<string>, deadline: number): Promise<Map<string, RunStatus | undefined>> {
    const statuses = new Map<string, RunStatus | undefined>();
    let open = [...ids];
    for (;;) {
      const still: string[] = [];
      for (const id of open) {
        const status = await this.status(id);
        statuses.set(id, status);
        if (status === undefined || !isTerminal(status)) still.push(id);
      }
      open = still;
      if (open.length === 0 || Date.now() > deadline) return statuses;
      await sleep(250);
    }
  }

  /**
   * The runs not ended now (pending, running, sleeping, waiting), with their stream versions; with `running`, only those
   * whose pass is under way: what a fault interrupts, not the runs queued behind them.
   */
  async inFlight(options: { running?: boolean } = {}): Promise<Snapshot> {
    const counted = (status: RunStatus) => (options.running ? status === 'running' : !isTerminal(status));
    return this.retry(async () => {
      const running = new Set<string>();
      for (let after: string | undefined; ; ) {
        const page = await this.store.projectionList({
          name: RUN_VIEW,
          limit: 1000,
          ...(after === undefined ? {} : { after }),
        });
        for (const row of page) if (counted((row.value as { status: RunStatus }).status)) running.add(row.key);
        if (page.length < 1000) break;
        after = page.at(-1)!.key;
      }
      const snapshot: Snapshot = new Map();
      for (const id of running) {
        const [last] = await this.store.eventReadStream({ streamId: `run:${id}`, backwards: true, limit: 1 });
        if (last) snapshot.set(id, last.version);
      }
      return snapshot;
    });
  }

  /** How many runs are pending: started, their first pass not begun (queued). */
  async queued(): Promise<number> {
    return this.retry(async () => {
      let count = 0;
      for (let after: string | undefined; ; ) {
        const page = await this.store.projectionList({
          name: RUN_VIEW,
          limit: 1000,
          ...(after === undefined ? {} : { after }),
        });
        count += page.filter((row) => (row.value as { status: RunStatus }).status === 'pending').length;
        if (page.length < 1000) return count;
        after = page.at(-1)!.key;
      }
    });
  }

  /** The runs of the snapshot with no event appended since, that have not ended either (one may have ended as the snapshot was read). */
  async unmoved(snapshot: Snapshot): Promise<string[]> {
    const still: string[] = [];
    for (const [id, version] of snapshot) {
      const next = await this.retry(() =>
        this.store.eventReadStream({ streamId: `run:${id}`, fromVersion: version + 1, limit: 1 }),
      );
      if (next.length > 0) continue;
      const status = await this.status(id);
      if (status === undefined || !isTerminal(status)) still.push(id);
    }
    return still;
  }

  /**
   * Seconds from `since` until every run of the snapshot moved again; null when none was in flight
   * or `limitMs` passed first (then `timedOut`, and `unmoved` names the runs that had not moved).
   */
  async recovery(
    snapshot: Snapshot,
    since: number,
    limitMs: number,
  ): Promise<{ seconds: number | null; timedOut: boolean; unmoved: string[] }> {
    if (snapshot.size === 0) return { seconds: null, timedOut: false, unmoved: [] };
    let unmoved = [...snapshot.keys()];
    while (Date.now() - since < limitMs) {
      unmoved = await this.unmoved(new Map([...snapshot].filter(([id]) => unmoved.includes(id))));
      if (unmoved.length === 0) return { seconds: round((Date.now() - since) / 1000), timedOut: false, unmoved };
      await sleep(200);
    }
    return { seconds: null, timedOut: true, unmoved };
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

export const round = (x: number) => Math.round(x * 10) / 10;

/** The slowest of the recoveries measured; null when no fault had work in flight to recover. */
export const slowest = (recoveries: Array<number | null>): number | null => {
  const measured = recoveries.filter((r): r is number => r !== null);
  return measured.length ? Math.max(...measured) : null;
};
