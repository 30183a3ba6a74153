import type { AppendResult, EventAppendParams } from './store.js';

/** One append's outcome in a batch: its result, or the error only its caller gets. */
export type Outcome = { result: AppendResult } | { error: unknown };
export const succeeded = (result: AppendResult): Outcome => ({ result });
export const failed = (error: unknown): Outcome => ({ error });

/** Commits a batch of two or more appends; throws when every append of it fails. */
export type CommitBatch = (batch: EventAppendParams[]) => Promise<Outcome[]>;

interface Pending {
  params: EventAppendParams;
  events: number;
  done: (result: AppendResult) => void;
  fail: (error: unknown) => void;
}

/**
 * A store's appends made outside a transaction: those submitted while a batch commits go together
 * in the next one (`commit`: one transaction, one commit, one fsync), each with its own result,
 * idempotency key and failure. Idle, an append goes at once, alone (`alone`). Two appends with one
 * idempotency key never share a batch: the second is a duplicate of the first, as on its own.
 */
export class AppendBatch {
  private queued: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly alone: (params: EventAppendParams) => Promise<AppendResult>,
    private readonly commit: CommitBatch,
    /** Batches committing at once. */
    private readonly lanes: number,
    /** The most events one batch holds (one append may hold more, alone). */
    private readonly maxEvents = 10_000,
  ) {}

  append(params: EventAppendParams): Promise<AppendResult> {
    const events = params.appends.reduce((sum, a) => sum + a.events.length, 0);
    return new Promise<AppendResult>((done, fail) => {
      const pending = { params, events, done, fail };
      // idle: at once (a caller appending one after another waits for no turn of the event loop)
      if (this.inFlight === 0 && this.queued.length === 0) this.start([pending]);
      else {
        this.queued.push(pending);
        this.schedule();
      }
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.lanes || this.queued.length === 0) return;
    this.scheduled = true;
    // the appends of this turn of the event loop go together
    setImmediate(() => {
      this.scheduled = false;
      if (this.inFlight >= this.lanes || this.queued.length === 0) return;
      this.start(this.take());
      this.schedule();
    });
  }

  /** Commits `batch` in a lane of its own; the lane is free again before its callers hear back. */
  private start(batch: Pending[]): void {
    this.inFlight += 1;
    void this.outcomes(batch).then((outcomes) => {
      this.inFlight -= 1;
      this.schedule();
      batch.forEach((p, i) => {
        const outcome = outcomes[i]!;
        if ('result' in outcome) p.done(outcome.result);
        else p.fail(outcome.error);
      });
    });
  }

  /** The next batch: the appends in submission order within `maxEvents`, up to one whose idempotency key is already in it (at least one append). */
  private take(): Pending[] {
    const keys = new Set<string>();
    let events = 0;
    let n = 0;
    for (const p of this.queued) {
      const key = p.params.idempotencyKey;
      if (n > 0 && (events + p.events > this.maxEvents || (key !== undefined && keys.has(key)))) break;
      events += p.events;
      n += 1;
      if (key !== undefined) keys.add(key);
    }
    return this.queued.splice(0, n);
  }

  private async outcomes(batch: Pending[]): Promise<Outcome[]> {
    try {
      if (batch.length === 1) return [{ result: await this.alone(batch[0]!.params) }];
      return await this.commit(batch.map((p) => p.params));
    } catch (error) {
      return batch.map(() => ({ error }));
    }
  }
}
