import { crashPoint } from '../crash.js';
import { LeaseLostError, storeUnavailable } from '../errors.js';
import type { EngineEvents } from '../observe/events.js';
import type { CompletionItem, Lease, NewTask, Store, StoredEvent, StreamAppend, Task } from '../storage/store.js';
import type { Journal } from './journal.js';

/** Keys a write locks in its `also` (a keyed run's concurrency keys, at its start and its end). */
export interface GroupLocks {
  keys: readonly string[];
  /**
   * Locks `keys` in `tx`: called once per batch for every write's keys of the same function, sorted, each once,
   * after the `prepare`s and before the append (its answer awaited after the append: the two may travel together), so
   * a batch of keyed starts and ends locks its keys in one statement and in one order (a `prepare` locking keys, a
   * start's `drop_newest` ones, takes its own before).
   */
  take: (tx: Store, keys: string[]) => Promise<void>;
}

/** One caller's share of a group commit. */
export interface GroupWrite<T = void> {
  /** Keys its `also` locks, taken for the whole batch ahead of them (see GroupLocks). */
  locks?: GroupLocks;
  /** Task leases this write needs: checked by the batch's one lease check; a write whose lease is gone writes nothing. */
  leases?: Lease[];
  /** How far a fenced batch's heartbeat extends `leases` (ms). */
  leaseMs?: number;
  /** Tasks this write completes, lease checked: a write whose task is no longer held writes nothing. */
  completes?: CompletionItem[];
  /** Appended with every other write's appends, in one statement. */
  appends?: StreamAppend[];
  /** Inserted with every other write's tasks, in one statement, after the append and every `also` (a run's first pass). */
  enqueue?: NewTask[];
  /** Tasks known once `also` has run (a keyed run's first pass, when it was let in), inserted with `enqueue`'s. */
  enqueueAfter?: () => NewTask[];
  /**
   * Runs in the transaction before the append (after fencing), and adds its `appends` to it: for a
   * write whose events depend on what it finds (a claim journals the tasks it claimed). Its value
   * is the caller's, unless `also` gives one.
   */
  prepare?: (tx: Store) => Promise<{ appends: StreamAppend[]; value: T }>;
  /**
   * One statement of the store's that appends nothing (a claim), run where a `prepare` runs; its
   * value is the caller's. Alone in its batch, it runs on its own, outside a transaction (a single
   * statement commits by itself): one round trip instead of three.
   */
  statement?: (store: Store) => Promise<T>;
  /** Runs in the transaction after the appends; its value is the caller's. */
  also?: (tx: Store) => Promise<T>;
}

/** What a write committed: its events (with positions and versions), its tasks and `also`'s value. */
export interface GroupResult<T> {
  events: StoredEvent[];
  tasks: Array<{ task: Task; created: boolean }>;
  value: T;
}

interface Pending {
  write: GroupWrite<unknown>;
  done: (result: GroupResult<unknown>) => void;
  fail: (error: unknown) => void;
}

/** Where a batch failed: inside the transaction (nothing committed) or at its commit (unknown). */
class CommitUnknown extends Error {
  constructor(override readonly cause: unknown) {
    super('the commit of a batch failed');
  }
}

/**
 * The group commit of one store in one process: the writes submitted while commits are in flight
 * (one on SQLite, two on PostgreSQL, three while a crowd waits) wait, then go together in the next
 * transaction, so one commit (one fsync) carries the writes of many runs and tasks. Idle, nothing
 * waits: the first write starts a commit in the next turn of the event loop (writes of the same
 * turn share it).
 *
 * A batch is one transaction: one check of every lease of the batch (held until it commits), one completion statement
 * for every task it completes, each write's `prepare` or `statement` (a claim), one append for all its events,
 * each write's `also`, in submission order, then one insert of all its new tasks. Fencing stays per write: a write whose lease is
 * gone or whose task is no longer running is dropped and fails with `LeaseLostError`, the others
 * commit. A caller is told "done"
 * only after the commit returned. When the transaction fails before its commit, nothing of it was
 * written, and each write is tried again alone, so one bad write (an invalid event, a conflict in
 * its `also`) fails only its caller. When the commit itself fails, whether it took effect is
 * unknown: every caller of the batch fails, none is retried, none is told "done".
 */
export class GroupCommit {
  private queued: Pending[] = [];
  /** Events of the writes waiting (`eventsOf`). */
  private waiting = 0;
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    /** The journal's limit of events per append: a batch is one append. */
    private readonly maxEvents: number,
    /** Where each committed batch's size is reported (`store:batch`). */
    private readonly events: EngineEvents | null = null,
    /**
     * Batches committing at once. PostgreSQL: two, so the next batch's statements travel while the
     * last one waits for its flush (the server flushes concurrent commits together), and one more
     * while a crowd waits (`open`). SQLite: one; its transactions take turns on one connection anyway.
     */
    private readonly lanes = store.dialect === 'postgres' ? 2 : 1,
  ) {}

  /** Commits `write` with whatever else is ready; resolves once it has committed. */
  submit<T>(write: GroupWrite<T>): Promise<GroupResult<T>> {
    return new Promise<GroupResult<T>>((done, fail) => {
      this.queued.push({ write, done: done as (result: GroupResult<unknown>) => void, fail });
      this.waiting += eventsOf(write);
      this.schedule();
    });
  }

  /**
   * Runs `fn`, one statement of the store's: on PostgreSQL alone, committing on its own (no
   * transaction around it); on SQLite in the next batch (one writer: its transactions take turns
   * anyway, so a shared commit only saves).
   */
  async statement<T>(fn: (store: Store) => Promise<T>): Promise<T> {
    if (this.store.dialect === 'postgres') return fn(this.store);
    return (await this.submit({ also: fn })).value;
  }

  /**
   * Runs `fn` in a transaction: on PostgreSQL its own (its statements wait for their answers, and
   * run in parallel with other transactions on other connections, not one after another in a batch);
   * on SQLite in the next batch, as `statement`. Measured, 16 appenders of a projected event each:
   * SQLite 17,556 → 43,251 appends/s; PostgreSQL in a batch 3,067 → 2,091/s.
   */
  async transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    if (this.store.dialect === 'postgres') return this.store.transaction(fn);
    return (await this.submit({ also: fn })).value;
  }

  /** Lanes open now: one more on PostgreSQL while a crowd of events waits, to share it out (`take`). */
  private open(): number {
    return this.lanes > 1 && this.waiting > 2 * SHARED ? this.lanes + 1 : this.lanes;
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.open() || this.queued.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.inFlight >= this.open() || this.queued.length === 0) return;
      const batch = this.take();
      this.inFlight += 1;
      void this.settle(batch).finally(() => {
        this.inFlight -= 1;
        this.schedule();
      });
      this.schedule();
    });
  }

  /**
   * The next batch: the writes in submission order while their events stay within half the
   * journal's limit per append, at least one. More than `SHARED` events waiting are shared out
   * evenly among the free lanes, and more than twice that open one more lane on PostgreSQL: a
   * batch is one server process's work, and the steps of 100 runs in flight, in one batch, kept
   * one core of the server busy while the other waited. Counted in events, not writes: a
   * completion journals in the store (no event here), and splitting a queue's completions only
   * added commits (drain at concurrency 10: ~10–15% slower when writes were counted).
   */
  private take(): Pending[] {
    const most = Math.min(
      this.maxEvents / 2,
      Math.max(SHARED, Math.ceil(this.waiting / (this.open() - this.inFlight))),
    );
    let events = 0;
    let n = 0;
    for (const p of this.queued) {
      const count = eventsOf(p.write);
      if (n > 0 && events + count > most) break;
      events += count;
      n += 1;
    }
    this.waiting -= events;
    return this.queued.splice(0, n);
  }

  private async settle(batch: Pending[]): Promise<void> {
    try {
      await this.commit(batch);
    } catch (error) {
      // a busy database (SQLite: a write lock held elsewhere) fails them all alike: one by one, each would wait as long again
      if (error instanceof CommitUnknown || batch.length === 1 || storeUnavailable(error)?.reason === 'busy') {
        const cause = error instanceof CommitUnknown ? error.cause : error;
        for (const p of batch) p.fail(cause);
      } else {
        // nothing of the batch committed: each write alone, so one write's failure is only its own
        for (const p of batch) await this.commit([p]).catch((e) => p.fail(e instanceof CommitUnknown ? e.cause : e));
      }
    }
  }

  /**
   * One transaction for `batch`; settles each write it fenced out or committed, throws when it
   * failed. A batch that writes something holds its leases and completes its tasks all or nothing
   * first, with its next statement (`taskHold`, `taskCompleteAll`): one lost (rare: another worker
   * took a run or task) undoes the transaction, and the batch goes again, `fenced`: leases renewed
   * and tasks completed by statements that say which are held, the writes that lost one left out.
   */
  private async commit(batch: Pending[], fenced = false): Promise<void> {
    const alone = batch.length === 1 ? batch[0]!.write : null;
    if (
      alone?.statement &&
      !alone.leases &&
      !alone.completes &&
      !alone.appends &&
      !alone.enqueue &&
      !alone.enqueueAfter &&
      !alone.prepare &&
      !alone.also &&
      !alone.locks
    ) {
      // alone, a failure is its caller's (settle), whether or not it took effect, as for a failed COMMIT
      const value = await alone.statement(this.store);
      this.events?.emit('store:batch', { writes: 1, events: 0 });
      batch[0]!.done({ events: [], tasks: [], value });
      return;
    }
    // the lease check and completions travel with a statement that follows them: an append or a claim
    const hold =
      !fenced &&
      batch.some((p) => p.write.leases?.length || p.write.completes?.length) &&
      batch.some((p) => p.write.appends?.length || p.write.enqueue?.length || p.write.prepare || p.write.statement);
    let finished = false;
    let outcome: { lost: Set<Pending>; results: Map<Pending, GroupResult<unknown>>; events: number };
    try {
      outcome = await this.store.transaction(async (tx) => {
        const lost = hold ? await this.hold(tx, batch) : await this.fence(tx, batch);
        const live = batch.filter((p) => !lost.has(p));
        const prepared = new Map<Pending, { appends: StreamAppend[]; value: unknown }>();
        for (const p of live) {
          if (p.write.prepare) prepared.set(p, await p.write.prepare(tx));
          else if (p.write.statement) prepared.set(p, { appends: [], value: await p.write.statement(tx) });
        }
        // before the append, whose projection rows are held to go ahead of a later statement (the lock would send them
        // on their own), and not waited for: on PostgreSQL the append travels with it, in one round trip
        const locked = lockAhead(tx, live);
        locked.catch(() => {});
        const appendsOf = (p: Pending) => [...(p.write.appends ?? []), ...(prepared.get(p)?.appends ?? [])];
        const appends = live.flatMap(appendsOf);
        const appended = appends.length > 0 ? (await this.journal.appendMany(appends, { tx })).events : [];
        // every write of the batch passes the point, as it did in a transaction of its own (crash tests count writes)
        const writes = live.filter((p) => appendsOf(p).length > 0).length;
        for (let i = 1; i < writes; i++) crashPoint('journal:beforeCommit');
        // each write's events, by the streams it appended to (no two writes of a batch share one: a run's writes go one at a time)
        const byStream = new Map<string, StoredEvent[]>();
        for (const event of appended) {
          const events = byStream.get(event.streamId);
          if (events) events.push(event);
          else byStream.set(event.streamId, [event]);
        }
        await locked;
        const values = new Map<Pending, unknown>();
        for (const p of live) values.set(p, p.write.also ? await p.write.also(tx) : prepared.get(p)?.value);
        // last: on PostgreSQL the projection rows of the appends and of `also` go ahead of it, in one statement
        const enqueued = await this.enqueue(tx, live);
        const results = new Map<Pending, GroupResult<unknown>>();
        for (const p of live) {
          const streams = new Set(appendsOf(p).map((a) => a.streamId));
          results.set(p, {
            events: [...streams].flatMap((stream) => byStream.get(stream) ?? []),
            tasks: enqueued.get(p) ?? [],
            value: values.get(p),
          });
        }
        finished = true;
        return { lost, results, events: appended.length };
      });
    } catch (error) {
      if (hold && !finished && error instanceof LeaseLostError) return this.commit(batch, true);
      throw finished ? new CommitUnknown(error) : error;
    }
    this.events?.emit('store:batch', { writes: outcome.results.size, events: outcome.events });
    for (const p of batch) {
      const result = outcome.results.get(p);
      if (result) p.done(result);
      else p.fail(new LeaseLostError('this worker no longer holds the task this write needs'));
    }
  }

  /** Inserts the tasks of every write of `live`, one statement: each write's own, by write. */
  private async enqueue(tx: Store, live: Pending[]): Promise<Map<Pending, GroupResult<unknown>['tasks']>> {
    const byWrite = new Map<Pending, GroupResult<unknown>['tasks']>();
    const tasksOf = new Map(live.map((p) => [p, [...(p.write.enqueue ?? []), ...(p.write.enqueueAfter?.() ?? [])]]));
    const tasks = live.flatMap((p) => tasksOf.get(p)!);
    if (tasks.length === 0) return byWrite;
    const results = await tx.taskEnqueue({ tasks });
    let at = 0;
    for (const p of live) {
      const count = tasksOf.get(p)!.length;
      if (count === 0) continue;
      byWrite.set(p, results.slice(at, at + count));
      at += count;
    }
    return byWrite;
  }

  /**
   * Renews the batch's leases and completes its tasks, one statement each: returns the writes that
   * lost one. A lease is held as its (task, token) pair: a stale pass and the one that took its
   * task over may share a batch, so statements whose answers name tasks only never see one task twice.
   */
  private async fence(tx: Store, batch: Pending[]): Promise<Set<Pending>> {
    const lost = new Set<Pending>();
    const held = new Set<string>();
    for (const [leaseMs, leases] of leasesByMs(batch)) {
      for (const round of distinctTasks(leases)) {
        const renewed = new Set(await tx.taskHeartbeat({ leases: round, leaseMs }));
        for (const l of round) if (renewed.has(l.id)) held.add(leaseKey(l));
      }
    }
    for (const p of batch) if (p.write.leases?.some((l) => !held.has(leaseKey(l)))) lost.add(p);
    return this.complete(tx, batch, lost);
  }

  /**
   * Holds every lease of the batch and completes every task it completes, or throws
   * `LeaseLostError` (maybe only at the next statement): nothing is lost then.
   */
  private async hold(tx: Store, batch: Pending[]): Promise<Set<Pending>> {
    const leases = batch.flatMap((p) => p.write.leases ?? []);
    if (leases.length > 0) await tx.taskHold({ leases });
    const completes = batch.flatMap((p) => p.write.completes ?? []);
    if (completes.length > 0) await tx.taskCompleteAll({ items: completes });
    return new Set();
  }

  /** Completes the tasks of the writes not `lost` yet, one statement: adds the writes whose task is no longer held. */
  private async complete(tx: Store, batch: Pending[], lost: Set<Pending>): Promise<Set<Pending>> {
    const completes = batch.filter((p) => !lost.has(p) && p.write.completes?.length).flatMap((p) => p.write.completes!);
    const completed = new Set<string>();
    for (const round of distinctTasks(completes)) {
      const done = new Set((await tx.taskComplete({ items: round })).map((t) => t.id));
      for (const c of round) if (done.has(c.id)) completed.add(leaseKey(c));
    }
    for (const p of batch) if (p.write.completes?.some((c) => !completed.has(leaseKey(c)))) lost.add(p);
    return lost;
  }
}

/** Takes the keys the writes of `live` lock, one call per locking function, sorted and each once. */
async function lockAhead(tx: Store, live: Pending[]): Promise<void> {
  const byTake = new Map<GroupLocks['take'], Set<string>>();
  for (const { write } of live) {
    if (!write.locks || write.locks.keys.length === 0) continue;
    const keys = byTake.get(write.locks.take) ?? new Set<string>();
    for (const key of write.locks.keys) keys.add(key);
    byTake.set(write.locks.take, keys);
  }
  for (const [take, keys] of byTake) await take(tx, [...keys].sort());
}

/** Events a batch takes at least before the waiting ones are shared out among free lanes (`take`): fewer cost more in statements than they gain. */
const SHARED = 64;

/** A write's events; a `prepare` adds events not known yet: at least one (a run's start), few more (a claim's, within the other half of a batch). */
function eventsOf(write: GroupWrite<unknown>): number {
  return (write.appends ?? []).reduce((sum, a) => sum + a.events.length, write.prepare ? 1 : 0);
}

function leasesByMs(batch: Pending[]): Map<number, Lease[]> {
  const byMs = new Map<number, Lease[]>();
  for (const p of batch) {
    if (!p.write.leases?.length) continue;
    const ms = p.write.leaseMs ?? 30_000;
    const leases = byMs.get(ms);
    if (leases) leases.push(...p.write.leases);
    else byMs.set(ms, [...p.write.leases]);
  }
  return byMs;
}

const leaseKey = (lease: Lease) => `${lease.id}\u0000${lease.leaseToken}`;

/** `leases` in rounds that name each task at most once (almost always one round). */
function distinctTasks<L extends Lease>(leases: L[]): L[][] {
  const rounds: Array<{ ids: Set<string>; leases: L[] }> = [];
  for (const lease of leases) {
    let round = rounds.find((r) => !r.ids.has(lease.id));
    if (!round) rounds.push((round = { ids: new Set(), leases: [] }));
    round.ids.add(lease.id);
    round.leases.push(lease);
  }
  return rounds.map((r) => r.leases);
}
