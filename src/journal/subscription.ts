import { backoffDelay, type Backoff } from '../backoff.js';
import type { EngineEvents } from '../observe/events.js';
import { crashPoint } from '../crash.js';
import { describeError, LeaseLostError, storeUnavailable, TerminalError } from '../errors.js';
import { newId } from '../ids.js';
import type { CommittedEvent, Cursor, Store, StoredEvent, Subscription } from '../storage/store.js';
import { Wakeup } from './wakeup.js';

export interface HandlerContext {
  /** The transaction the cursor advances in: writes through it commit with the advance, exactly once. */
  tx: Store;
  attempt: number;
  subscription: string;
  /** What `prepare` returned for this attempt (undefined without one). */
  prepared?: unknown;
}

export type EventHandler = (event: StoredEvent, ctx: HandlerContext) => Promise<void>;

/**
 * What `prepare` returns when the event needs nothing written: it is passed over like a filtered one (no transaction,
 * the handler never sees it; the next advance moves past it). After a crash before that advance it is prepared again.
 *
 * @example
 * prepare: async (event) => ((await wanted(event)) ? await render(event) : PASS_OVER)
 */
export const PASS_OVER: unique symbol = Symbol('pass over');

export interface SubscribeOptions {
  streamPrefix?: string;
  types?: string[];
  /** Events it returns false for are passed over (the cursor moves past them; the handler never sees them). */
  filter?: (event: StoredEvent) => boolean;
  /**
   * Slow work for an event (a model call, a request) done before the handler's transaction opens,
   * so no lock is held meanwhile; its result reaches the handler as `ctx.prepared`. It runs again
   * on every attempt, and after a crash, so it must be safe to repeat. `PASS_OVER`: nothing to do for this event.
   */
  prepare?: (event: StoredEvent, ctx: { attempt: number; subscription: string }) => Promise<unknown>;
  /** Ordered: a failing event blocks the subscription until an operator retries or skips it. Else it is parked. */
  ordered?: boolean;
  /** Where a new subscription starts. */
  from?: 'beginning' | 'end';
  /** Attempts per event before it is parked (or blocks an ordered subscription). */
  maxAttempts?: number;
  backoff?: Backoff;
  batchSize?: number;
  /** How often to look for new events when no wake-up arrives: the fallback, not the main path. */
  pollMs?: number;
  leaseMs?: number;
  /** Who holds the lease; default a fresh id. The engine names its process in it (see `Liveness`). */
  owner?: string;
  onError?: (error: unknown) => void;
  /** Where `subscription:parked` is reported (the engine passes its own). */
  events?: EngineEvents;
}

type Resolved = Required<
  Omit<SubscribeOptions, 'streamPrefix' | 'types' | 'onError' | 'filter' | 'prepare' | 'events' | 'owner'>
> &
  SubscribeOptions;

const defaults: Resolved = {
  ordered: false,
  from: 'beginning',
  maxAttempts: 5,
  backoff: { baseMs: 100, factor: 2, maxMs: 10_000, jitter: 0.2 },
  batchSize: 100,
  pollMs: 1000,
  leaseMs: 30_000,
};

type Outcome = 'done' | 'passed' | 'blocked' | 'lost' | 'stopped';

/**
 * A durable, named cursor over the journal that hands each event to `handler`, at least once,
 * in committed order. One process at a time holds a subscription (a lease on its row); the
 * handler's writes through `ctx.tx` and the cursor advance commit together.
 *
 * @example
 * const sub = new Subscriber(store, 'emails', { streamPrefix: 'order-' }, async (event, { tx }) => { … });
 * await sub.start();
 */
export class Subscriber {
  readonly owner: string;
  private readonly options: Resolved;
  private readonly wakeup = new Wakeup();
  private running = false;
  private loop: Promise<void> | null = null;
  private leaseRenewAt = 0;
  private idleWaiters: Array<() => void> = [];
  /** The holder's row as last seen while another process holds it, and when it last changed; null when it is ours. */
  private standing: { owner: string | null | undefined; expiresAt: number | null; seenAt: number } | null = null;

  constructor(
    private readonly store: Store,
    readonly name: string,
    options: SubscribeOptions,
    private readonly handler: EventHandler,
  ) {
    this.options = { ...defaults, ...options };
    this.owner = options.owner ?? newId('owner');
  }

  async start(): Promise<void> {
    if (this.running) return;
    const { streamPrefix, types, ordered, from } = this.options;
    await this.store.subscriptionEnsure({
      name: this.name,
      streamPrefix: streamPrefix ?? null,
      types: types ?? null,
      ordered,
      from,
    });
    const unlisten = await this.store.listen('events', () => this.wakeup.wake());
    this.running = true;
    this.loop = this.run().finally(unlisten);
  }

  /** Stops after the event in hand, and gives the lease up so another process can take over at once. */
  async stop(): Promise<void> {
    this.running = false;
    this.wakeup.wake();
    await this.loop;
    this.loop = null;
    await this.store.subscriptionRelease({ name: this.name, owner: this.owner });
  }

  /** Resolves the next time the subscriber finds nothing to do: everything committed so far is handled. */
  idle(): Promise<void> {
    this.wakeup.wake();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async run(): Promise<void> {
    let catchUp = 0;
    while (this.running) {
      let worked: boolean | 'standby' = false;
      try {
        worked = await this.tick();
      } catch (error) {
        this.options.onError?.(error);
      }
      if (worked === 'standby') {
        await this.standBy();
        catchUp = 0;
        continue;
      }
      if (worked || !this.running) {
        catchUp = 0;
        continue;
      }
      for (const resolve of this.idleWaiters.splice(0)) resolve();
      const woken = await this.wakeup.wait(catchUp || this.options.pollMs);
      // On PostgreSQL a wake-up can come before its event is past the committed-order horizon (an
      // older transaction elsewhere is still open): look again after 10, 50 and 250 ms, then poll.
      catchUp = woken ? 10 : catchUp && catchUp < 250 ? catchUp * 5 : 0;
    }
  }

  /**
   * Another process holds the subscription: look again in `pollMs`, not at every wake-up. Each commit wakes every
   * subscriber of every process, and a lease attempt on a row whose holder's transaction is open waits for that
   * transaction: the processes standing by kept 4 of their 10 connections waiting on those locks (measured, chaos
   * under load), and in a burst after an outage they fought the runs for connections.
   */
  private async standBy(): Promise<void> {
    const until = Date.now() + this.options.pollMs;
    while (this.running && Date.now() < until) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
      await this.wakeup.wait(until - Date.now());
    }
  }

  /**
   * Standing by, it reads the row (no lock) and tries the lease only when the row is free, its own, its lease has
   * ended by the database's clock (expired, or ended by the liveness sweep, which sets the expiry to a moment ago and
   * leaves the owner), or it has not been renewed for a whole `leaseMs` of this process's clock. A live holder's
   * lease is in the future by the database's clock, so no attempt waits on its open transaction.
   */
  private async lease(): Promise<Subscription | null> {
    const standing = this.standing;
    if (standing) {
      const row = await this.store.subscriptionGet({ name: this.name });
      const same = row.owner === standing.owner && row.leaseExpiresAt === standing.expiresAt;
      if (!same) this.standing = { owner: row.owner, expiresAt: row.leaseExpiresAt, seenAt: Date.now() };
      const stale = same && Date.now() - standing.seenAt > this.options.leaseMs;
      const held = row.owner !== null && row.owner !== this.owner && !stale;
      // the clock read after the row: a lease ended as that row was read has ended by then too
      if (held && (row.leaseExpiresAt === null || row.leaseExpiresAt >= (await this.store.now()))) return null;
    }
    const sub = await this.store.subscriptionLease({ name: this.name, owner: this.owner, ttlMs: this.options.leaseMs });
    this.leaseRenewAt = Date.now() + this.options.leaseMs / 3;
    if (sub) this.standing = null;
    else if (!standing) this.standing = { owner: undefined, expiresAt: null, seenAt: Date.now() };
    return sub;
  }

  /** True when it did something (look again at once), 'standby' when another process holds the subscription. */
  private async tick(): Promise<boolean | 'standby'> {
    const sub = await this.lease();
    if (!sub) return 'standby';
    if (sub.blockedReason !== null) return this.tryUnblock(sub);
    if (await this.redeliverParked()) return true;
    const { batchSize, filter } = this.options;
    const read = await this.store.eventReadCommitted({ after: sub.cursor, limit: batchSize, ...this.sqlFilters() });
    // `stored`: the cursor as stored; `passed`: past the events the JS filter passed over since
    let stored = sub.cursor;
    let passed = sub.cursor;
    for (const item of read.events) {
      if (!this.running) return true;
      if (filter && !filter(item.event)) {
        // no transaction per event passed over: the next advance moves past it
        passed = item.cursor;
        continue;
      }
      if (Date.now() > this.leaseRenewAt && !(await this.lease())) return true;
      const outcome = await this.deliver(item, passed === stored ? null : passed);
      if (outcome === 'passed') passed = item.cursor;
      else if (outcome === 'done') stored = passed = item.cursor;
      else return true;
    }
    // Past what the read covered but did not deliver (filtered out in SQL or here): one write per
    // read, so a subscription whose filters match nothing never reads those events again.
    if (read.cursor !== stored) {
      try {
        await this.store.subscriptionAdvance({ name: this.name, owner: this.owner, cursor: read.cursor });
      } catch (error) {
        if (error instanceof LeaseLostError) return false;
        throw error;
      }
    }
    return read.more || read.events.length > 0;
  }

  private sqlFilters(): { streamPrefix?: string; types?: string[] } {
    const { streamPrefix, types } = this.options;
    return { ...(streamPrefix ? { streamPrefix } : {}), ...(types ? { types } : {}) };
  }

  /**
   * Hands one event to the handler with retries; parks it (or blocks) when they run out. `before`:
   * the cursor just before it when events passed over precede it, so a blocked subscription's
   * cursor stays right before the event that blocks it.
   */
  private async deliver({ event, cursor }: CommittedEvent, before: Cursor | null): Promise<Outcome> {
    const advance = (tx: Store) => tx.subscriptionAdvance({ name: this.name, owner: this.owner, cursor });
    const result = await this.attempt(event, advance, true);
    if (result.outcome !== 'failed') return result.outcome;
    const park = { subscription: this.name, event, error: result.error, attempts: this.options.maxAttempts };
    this.options.events?.emit('subscription:parked', {
      subscription: this.name,
      position: event.position,
      error: result.error,
    });
    if (this.options.ordered) {
      const { maxAttempts } = this.options;
      const reason = `event ${event.position} (${event.type}) failed ${maxAttempts} times: ${result.error}`;
      await this.store.transaction(async (tx) => {
        if (before !== null) await tx.subscriptionAdvance({ name: this.name, owner: this.owner, cursor: before });
        await tx.parkedAdd(park);
        await tx.subscriptionBlock({ name: this.name, blockedReason: reason });
      });
      return 'blocked';
    }
    await this.store.transaction(async (tx) => {
      await tx.parkedAdd(park);
      await advance(tx);
    });
    return 'done';
  }

  /** `mayPassOver`: a `PASS_OVER` from `prepare` ends it without a transaction ('passed'); else only `commit` runs. */
  private async attempt(
    event: StoredEvent,
    commit: (tx: Store) => Promise<unknown>,
    mayPassOver = false,
  ): Promise<{ outcome: Outcome } | { outcome: 'failed'; error: string }> {
    const { prepare } = this.options;
    let outagePauseMs = 50;
    for (let attempt = 1; ; attempt++) {
      try {
        const prepared = prepare ? await prepare(event, { attempt, subscription: this.name }) : undefined;
        if (prepared === PASS_OVER && mayPassOver) return { outcome: 'passed' };
        await this.store.transaction(async (tx) => {
          if (prepared !== PASS_OVER) await this.handler(event, { tx, attempt, subscription: this.name, prepared });
          crashPoint('subscription:beforeAdvance');
          await commit(tx);
        });
        return { outcome: 'done' };
      } catch (error) {
        if (error instanceof LeaseLostError) return { outcome: 'lost' };
        // The database being away is not the event's fault: no attempt used up (five quick ones
        // would park it, unanswered, during a 3 s restart), and it is tried again within a second
        // of the database's return.
        if (storeUnavailable(error)) {
          attempt -= 1;
          outagePauseMs = Math.min(outagePauseMs * 2, 1000);
          if (!(await this.pause(outagePauseMs))) return { outcome: 'stopped' };
          continue;
        }
        if (attempt >= this.options.maxAttempts || error instanceof TerminalError)
          return { outcome: 'failed', error: describeError(error) };
        if (!(await this.pause(backoffDelay(attempt, this.options.backoff)))) return { outcome: 'stopped' };
      }
    }
  }

  /** Sleeps, but wakes early to stop; false when stopping. */
  private async pause(ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    while (this.running && Date.now() < until) await this.wakeup.wait(until - Date.now());
    return this.running;
  }

  /** Parked events an operator asked to retry: delivered again, then marked resolved (or parked anew). */
  private async redeliverParked(): Promise<boolean> {
    const retries = await this.store.parkedList({ subscription: this.name, status: 'retry' });
    for (const parked of retries) {
      const key = { subscription: this.name, position: parked.position };
      const result = await this.attempt(parked.event, (tx) => tx.parkedSetStatus({ ...key, status: 'resolved' }));
      if (result.outcome === 'failed')
        await this.store.parkedAdd({
          ...key,
          event: parked.event,
          error: result.error,
          attempts: this.options.maxAttempts,
        });
      else if (result.outcome !== 'done') break;
    }
    return retries.length > 0;
  }

  /** A blocked ordered subscription moves again once its failed event is marked retry or skipped. */
  private async tryUnblock(sub: Subscription): Promise<boolean> {
    const { filter } = this.options;
    let next: CommittedEvent | undefined;
    for (let after = sub.cursor; ; ) {
      const read = await this.store.eventReadCommitted({ after, limit: 1, ...this.sqlFilters() });
      next = read.events[0];
      if ((next && (!filter || filter(next.event))) || !read.more) break;
      after = read.cursor;
    }
    if (next && filter && !filter(next.event)) next = undefined;
    const parked =
      next &&
      (await this.store.parkedList({ subscription: this.name })).find((p) => p.position === next.event.position);
    if (next && parked?.status === 'skipped') {
      await this.store.transaction(async (tx) => {
        await tx.subscriptionAdvance({ name: this.name, owner: this.owner, cursor: next.cursor });
        await tx.subscriptionBlock({ name: this.name, blockedReason: null });
      });
      return true;
    }
    if (!next || parked?.status === 'retry') {
      await this.store.transaction(async (tx) => {
        if (parked)
          await tx.parkedSetStatus({ subscription: this.name, position: parked.position, status: 'resolved' });
        await tx.subscriptionBlock({ name: this.name, blockedReason: null });
      });
      return true;
    }
    return false;
  }
}
