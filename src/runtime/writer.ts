import { LeaseLostError } from '../errors.js';
import type { Journal } from '../journal/journal.js';
import type { Lease, NewEvent, Store } from '../storage/store.js';
import type { Blobs } from './blobs.js';
import { runStream } from './history.js';

interface Queued {
  events: NewEvent[];
  also: ((tx: Store) => Promise<void>) | undefined;
  done: () => void;
  fail: (error: unknown) => void;
}

/**
 * The journal writes of one pass. Each transaction first renews the pass's task lease and aborts
 * if it is gone, so a worker that lost the run writes nothing. Transactions commit one at a time,
 * in order; writes issued meanwhile (parallel steps) go together in the next one, after the
 * deferred events (step completions), so nothing a step did is journaled before the completions
 * it saw. After one failure every write fails: what would come next builds on what was not written.
 */
export class RunWriter {
  private readonly deferred: NewEvent[] = [];
  private readonly queued: Queued[] = [];
  private writing = false;
  private failure: { error: unknown } | null = null;

  constructor(
    private readonly o: { store: Store; journal: Journal; runId: string; lease: Lease; leaseMs: number; blobs?: Blobs },
    private readonly onFailure: (error: unknown) => void,
  ) {}

  /** Journaled with the next write. */
  defer(event: NewEvent): void {
    this.deferred.push(event);
  }

  /** Appends `events` to the run's stream and runs `also` in the same transaction. */
  write(events: NewEvent[], also?: (tx: Store) => Promise<void>): Promise<void> {
    if (this.failure) return Promise.reject(this.failure.error);
    return new Promise((done, fail) => {
      this.queued.push({ events, also, done, fail });
      if (this.writing) return;
      this.writing = true;
      // after the current callbacks, so parallel calls of this tick share one transaction
      queueMicrotask(() => void this.commit());
    });
  }

  /** Writes what is deferred: before a pass ends without another write. */
  flush(): Promise<void> {
    return this.write([]);
  }

  private async commit(): Promise<void> {
    while (this.queued.length > 0) {
      const batch = this.queued.splice(0);
      const events = [...this.deferred.splice(0), ...batch.flatMap((w) => w.events)];
      try {
        if (this.failure) throw this.failure.error;
        if (events.length > 0) {
          await this.o.store.transaction(async (tx) => {
            const held = await tx.taskHeartbeat({ leases: [this.o.lease], leaseMs: this.o.leaseMs });
            if (held.length === 0) throw new LeaseLostError(`run ${this.o.runId}: this worker no longer holds it`);
            const stored = this.o.blobs ? await this.o.blobs.offloadEvents(tx, this.o.runId, events) : events;
            await this.o.journal.append(runStream(this.o.runId), stored, { tx });
            for (const w of batch) await w.also?.(tx);
          });
        }
        for (const w of batch) w.done();
      } catch (error) {
        if (!this.failure) {
          this.failure = { error };
          this.onFailure(error);
        }
        for (const w of batch) w.fail(error);
      }
    }
    this.writing = false;
  }
}
