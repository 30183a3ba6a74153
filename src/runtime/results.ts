import { CancelledError } from '../errors.js';
import type { Journal } from '../journal/journal.js';
import type { Wakeup } from '../journal/wakeup.js';
import type { Blobs } from './pass/blobs.js';
import { runStream } from './pass/history.js';
import type { CommittedViews, RunView } from './read/view.js';

/** What `ResultWaiters` reads through its runtime. */
export interface ResultHost {
  journal: Journal;
  blobs: Blobs;
  /** The run views this process committed last: a waiter woken by one of its commits takes it. */
  views: CommittedViews;
  /** Whether a pass of run `id` running here wrote `version` of its stream. */
  wrote(id: string, version: number): boolean | undefined;
  /** The view as stored: big values as references. */
  stored(id: string): Promise<RunView>;
}

/** The `result` waiters of a runtime, and the passes begun here that wake them as they end without ending their run. */
export class ResultWaiters {
  /** The passes begun here, by run id; `result` waiters here, woken as a pass ends without ending its run. */
  private readonly passing = new Map<string, number>();
  private readonly waiters = new Map<string, Set<Wakeup>>();

  constructor(private readonly host: ResultHost) {}

  /** A pass of run `id` begins here. */
  begin(id: string): void {
    this.passing.set(id, (this.passing.get(id) ?? 0) + 1);
  }

  /** A pass of run `id` begun here ends; `ended`: it ended the run. */
  end(id: string, ended: boolean): void {
    const left = this.passing.get(id)! - 1;
    if (left > 0) this.passing.set(id, left);
    else this.passing.delete(id);
    // a run this pass ended wakes its waiters by its commit, with the view; any other end of a pass, to read it
    if (!ended) for (const waiter of this.waiters.get(id) ?? []) waiter.wake();
  }

  async result<O>(id: string, pollMs = 1000): Promise<O> {
    // a step of a pass running here is no news: only a write that ended the run, or one from elsewhere, is;
    // nor is the run's start (version 1): the view read below exists, so it was written before
    let woken: number | undefined;
    const watch = await this.host.journal.watch((stream, version) => {
      if (stream === '') woken = undefined;
      else if (stream === runStream(id) && version !== 1 && !(version !== undefined && this.host.wrote(id, version)))
        woken = version;
      else return false;
      return true;
    });
    const wakeup = watch.wakeup;
    const waiters = this.waiters.get(id) ?? new Set<Wakeup>();
    this.waiters.set(id, waiters);
    waiters.add(wakeup);
    try {
      // a pass runs here (a run started here runs its first pass at once): the run's end, written by it, or the pass's
      // own end wakes this, so the view need not be read before (a stale pass ends too, once it finds its lease gone)
      if (this.passing.has(id)) await wakeup.wait(pollMs);
      for (;;) {
        // woken by a commit of this process, whose view it kept: no read
        const kept = woken === undefined ? undefined : this.host.views.committed(id, woken);
        woken = undefined;
        const view = kept ?? (await this.host.stored(id));
        if (view.status === 'success' || view.status === 'partial_success')
          return (await this.host.blobs.resolve(view.output)) as O;
        if (view.status === 'failed') throw new Error(view.error ?? `run ${id} failed`);
        if (view.status === 'cancelled') throw new CancelledError(`run ${id} was cancelled`);
        await wakeup.wait(pollMs);
      }
    } finally {
      waiters.delete(wakeup);
      if (waiters.size === 0) this.waiters.delete(id);
      await watch.stop();
    }
  }
}
