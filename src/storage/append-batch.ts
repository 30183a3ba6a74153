import type { AppendResult, EventAppendParams } from './store.js';

/** One append's outcome in a batch: its result, or the error only its caller gets. */
export type Outcome = { result: AppendResult } | { error: unknown };

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
      this.queued.push({ params, events, done, fail });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.lanes || this.queued.length === 0) return;
    this.scheduled = true;
    // the appends of this turn of the event loop go together
    setImmediate(() => {
      this.scheduled = false;
      if (this.inFlight >= this.lanes || this.queued.length === 0) return;
      const batch = this.take();
      this.inFlight += 1;
      void this.settle(batch).finally(() => {
        this.inFlight -= 1;
        this.schedule();
      });
      this.schedule();
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

  private async settle(batch: Pending[]): Promise<void> {
    if (batch.length === 1) {
      const [p] = batch as [Pending];
      return this.alone(p.params).then(p.done, p.fail);
    }
    let outcomes: Outcome[];
    try {
      outcomes = await this.commit(batch.map((p) => p.params));
    } catch (error) {
      for (const p of batch) p.fail(error);
      return;
    }
    batch.forEach((p, i) => {
      const outcome = outcomes[i]!;
      if ('result' in outcome) p.done(outcome.result);
      else p.fail(outcome.error);
    });
  }
}
