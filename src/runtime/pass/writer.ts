import { LeaseLostError } from '../../errors.js';
import type { GroupLocks } from '../../journal/group-commit.js';
import type { Journal } from '../../journal/journal.js';
import type { Lease, NewEvent, Store } from '../../storage/store.js';
import type { Blobs } from './blobs.js';
import { isTerminalEvent } from '../events.js';
import { runStream } from './history.js';

interface Queued {
  events: NewEvent[];
  also: ((tx: Store) => Promise<void>) | undefined;
  locks: GroupLocks | undefined;
  done: () => void;
  fail: (error: unknown) => void;
}

/**
 * The journal writes of one pass, committed through the journal's group commit: each write renews
 * the pass's task lease in its batch and is dropped if the lease is gone, so a worker that lost
 * the run writes nothing (other runs' writes in the batch commit). Writes commit one at a time,
 * in order; writes issued meanwhile (parallel steps) go together in the next one, after the
 * deferred events (step completions), so nothing a step did is journaled before the completions
 * it saw. After one failure every write fails: what would come next builds on what was not written.
 */
export class RunWriter {
  private readonly deferred: NewEvent[] = [];
  private readonly queued: Queued[] = [];
  private writing = false;
  private failure: { error: unknown } | null = null;
  /** The versions this pass's appends ended at, unless they ended the run: their wake-ups are its own, not news. */
  readonly wrote = new Set<number>();

  constructor(
    private readonly o: { store: Store; journal: Journal; runId: string; lease: Lease; leaseMs: number; blobs?: Blobs },
    private readonly onFailure: (error: unknown) => void,
  ) {}

  /** Journaled with the next write. */
  defer(event: NewEvent): void {
    this.deferred.push(event);
  }

  /** Appends `events` to the run's stream and runs `also` in the same transaction (`locks`: keys `also` locks). */
  write(events: NewEvent[], also?: (tx: Store) => Promise<void>, locks?: GroupLocks): Promise<void> {
    if (this.failure) return Promise.reject(this.failure.error);
    return new Promise((done, fail) => {
      this.queued.push({ events, also, locks, done, fail });
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
          // shared with the ready writes of every other run and task of this process (GroupCommit); values too
          // big for an event go to the blob store in the batch's transaction, before its append
          const also = batch.some((w) => w.also)
            ? async (tx: Store) => {
                for (const w of batch) await w.also?.(tx);
              }
            : undefined;
          const streamId = runStream(this.o.runId);
          const blobs = this.o.blobs;
          const carried = blobs
            ? {
                prepare: async (tx: Store) => ({
                  appends: [{ streamId, events: await blobs.offloadEvents(tx, this.o.runId, events) }],
                  value: undefined,
                }),
              }
            : { appends: [{ streamId, events }] };
          const locks = batch.find((w) => w.locks)?.locks;
          const written = await this.o.journal.group
            .submit({
              leases: [this.o.lease],
              leaseMs: this.o.leaseMs,
              ...carried,
              ...(also ? { also } : {}),
              ...(locks ? { locks } : {}),
            })
            .catch((error) => {
              throw error instanceof LeaseLostError
                ? new LeaseLostError(`run ${this.o.runId}: this worker no longer holds it`)
                : error;
            });
          const last = written.events.at(-1);
          if (last && !events.some((e) => isTerminalEvent(e.type))) this.wrote.add(last.version);
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
