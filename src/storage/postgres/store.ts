import type pg from 'pg';
import type { NotifyChannel, Store, StoreStatus } from '../store.js';
import { appendWakeups } from '../wakeups.js';
import { createPool, migrate, poolDb, prepared, rethrow, txDb, type Db, type Tx } from './connection.js';
import * as agents from './agents.js';
import * as events from './events.js';
import * as maintenance from './maintenance.js';
import { Listener, Notifier, notifySql } from './notify.js';
import * as processes from './processes.js';
import * as subscriptions from './subscriptions.js';
import * as blobs from './blobs.js';
import * as pauses from './pauses.js';
import * as tasks from './tasks.js';

const NOW = prepared('now', 'SELECT rl_now_ms() AS now');

/** Shared by a store and every transaction store made from it. */
interface Shared {
  url: string;
  pool: pg.Pool;
  poolDb: Db;
  listener: Listener;
  notifier: Notifier;
}

/**
 * The scale-out backend: any number of processes share one PostgreSQL database. Pending migrations
 * are applied on open (safe when several processes open at once). Outside a transaction each method
 * is one statement on the pool that commits on its own (its wake-up follows the commit); a second statement
 * only reads, when the first found an idempotency key already used or a lease not held. So no
 * method needs a transaction of its own.
 *
 * @example const store = await openPostgresStore(process.env.DATABASE_URL!, { poolSize: 20 })
 */
export async function openPostgresStore(url: string, options: { poolSize?: number; migrate?: boolean } = {}): Promise<Store> {
  if (options.migrate !== false) await migrate(url);
  const pool = createPool(url, options.poolSize ?? 10);
  const listener = new Listener(url);
  // pg sets a client's backend pid (not in its types) when it connects
  const pid = (client: pg.PoolClient) => (client as unknown as { processID: number }).processID;
  pool.on('connect', (client) => listener.own.add(pid(client)));
  pool.on('remove', (client) => listener.own.delete(pid(client)));
  return new PostgresStore({ url, pool, poolDb: poolDb(pool), listener, notifier: new Notifier(pool) }, null);
}

/**
 * The store's operations are methods, not arrow properties: every transaction makes a store of its
 * own, and allocating some 70 closures for each one took a tenth of a step's CPU (profiled under tsx).
 */
class PostgresStore implements Store {
  readonly dialect = 'postgres' as const;
  private readonly db: Db;

  /** Inside a transaction: the wake-ups to send once it has committed. */
  private readonly pending = new Map<string, [NotifyChannel, string]>();
  /** Inside a transaction: what runs once it has committed. */
  private readonly committed: Array<() => void> = [];

  constructor(
    private readonly shared: Shared,
    private readonly tx: Tx | null,
  ) {
    this.db = tx ? txDb(tx) : shared.poolDb;
  }

  private wake(channel: NotifyChannel, payloads: Iterable<string>): void {
    for (const payload of payloads) {
      if (this.tx) this.pending.set(`${channel}\u0000${payload}`, [channel, payload]);
      else {
        this.shared.notifier.send(channel, payload);
        this.shared.listener.deliver(channel, payload);
      }
    }
  }

  async transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    if (this.tx) {
      if (this.tx.finished) throw new Error('this transaction has already finished');
      return fn(this);
    }
    const client = await this.shared.pool.connect();
    // the BEGIN goes in the message of the transaction's first statement
    const tx: Tx = { client, finished: false, unsent: ['BEGIN'] };
    let broken: Error | undefined;
    // A checked-out client has no error listener of the pool's: without this, the connection
    // dropping while `fn` awaits something else would be an uncaught exception.
    const onError = (error: Error) => (broken = error);
    client.on('error', onError);
    try {
      const txStore = new PostgresStore(this.shared, tx);
      const result = await fn(txStore).finally(() => (tx.finished = true));
      // the writes not sent yet and the COMMIT go in one message, and the wake-ups after it: should
      // one fail (a payload over 8000 bytes, a full notification queue), the caller is told
      // "failed" for a write that committed, which is retried (at least once), never "done" for
      // one that did not
      const commit = [...tx.unsent.splice(0), 'COMMIT'];
      if (txStore.pending.size > 0) commit.push(notifySql(txStore.pending.values()));
      await client.query(commit.join('; ')).catch(rethrow);
      for (const fn of txStore.committed) fn();
      for (const [channel, payload] of txStore.pending.values()) this.shared.listener.deliver(channel, payload);
      return result;
    } catch (error) {
      // A connection that cannot even roll back is destroyed rather than returned to the pool.
      if (tx.unsent[0] !== 'BEGIN') await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
      throw error;
    } finally {
      tx.finished = true;
      client.off('error', onError);
      client.release(broken);
    }
  }

  onCommit(fn: () => void): void {
    if (this.tx) this.committed.push(fn);
    else fn();
  }

  listen(channel: NotifyChannel, onWake: (payload: string) => void): Promise<() => Promise<void>> {
    return this.shared.listener.add(channel, onWake);
  }

  async now(): Promise<number> {
    const [row] = await this.db.rows<{ now: number }>(NOW);
    return row!.now;
  }

  async status(): Promise<StoreStatus> {
    const [row] = await this.db.rows<{ schema_version: number; events: number; streams: number; subscriptions: number }>(
      `SELECT (SELECT max(version) FROM schema_migrations) AS schema_version, (SELECT count(*) FROM events) AS events,
         (SELECT count(*) FROM streams) AS streams, (SELECT count(*) FROM subscriptions) AS subscriptions`,
    );
    return {
      dialect: 'postgres',
      location: maskPassword(this.shared.url),
      schemaVersion: row!.schema_version,
      events: row!.events,
      streams: row!.streams,
      tasks: await tasks.taskCounts(this.db),
      subscriptions: row!.subscriptions,
    };
  }

  async close(): Promise<void> {
    await this.shared.notifier.drain();
    await this.shared.listener.close();
    if (!this.shared.pool.ended) await this.shared.pool.end();
  }

  async eventAppend(p: Parameters<Store['eventAppend']>[0]) {
    const result = await events.eventAppend(this.db, p);
    if (!result.duplicate) this.wake('events', appendWakeups(p, result));
    return result;
  }
  eventReadStream(p: Parameters<Store['eventReadStream']>[0]) {
    return events.eventReadStream(this.db, p);
  }
  eventReadAll(p: Parameters<Store['eventReadAll']>[0]) {
    return events.eventReadAll(this.db, p);
  }
  eventReadCommitted(p: Parameters<Store['eventReadCommitted']>[0]) {
    return events.eventReadCommitted(this.db, p);
  }
  eventHead() {
    return events.eventHead(this.db);
  }

  streamList(p: Parameters<Store['streamList']>[0]) {
    return events.streamList(this.db, p);
  }
  projectionPut(p: Parameters<Store['projectionPut']>[0]) {
    return events.projectionPut(this.db, p);
  }
  projectionGet(p: Parameters<Store['projectionGet']>[0]) {
    return events.projectionGet(this.db, p);
  }
  projectionList(p: Parameters<Store['projectionList']>[0]) {
    return events.projectionList(this.db, p);
  }
  projectionListRecent(p: Parameters<Store['projectionListRecent']>[0]) {
    return events.projectionListRecent(this.db, p);
  }
  projectionDelete(p: Parameters<Store['projectionDelete']>[0]) {
    return events.projectionDelete(this.db, p);
  }
  projectionGetMany(p: Parameters<Store['projectionGetMany']>[0]) {
    return events.projectionGetMany(this.db, p);
  }
  projectionPutMany(p: Parameters<Store['projectionPutMany']>[0]) {
    return events.projectionPutMany(this.db, p);
  }

  subscriptionEnsure(p: Parameters<Store['subscriptionEnsure']>[0]) {
    return subscriptions.subscriptionEnsure(this.db, p);
  }
  subscriptionLease(p: Parameters<Store['subscriptionLease']>[0]) {
    return subscriptions.subscriptionLease(this.db, p);
  }
  subscriptionRelease(p: Parameters<Store['subscriptionRelease']>[0]) {
    return subscriptions.subscriptionRelease(this.db, p);
  }
  subscriptionAdvance(p: Parameters<Store['subscriptionAdvance']>[0]) {
    return subscriptions.subscriptionAdvance(this.db, p);
  }
  subscriptionBlock(p: Parameters<Store['subscriptionBlock']>[0]) {
    return subscriptions.subscriptionBlock(this.db, p);
  }
  subscriptionGet(p: Parameters<Store['subscriptionGet']>[0]) {
    return subscriptions.subscriptionGet(this.db, p);
  }
  subscriptionList() {
    return subscriptions.subscriptionList(this.db);
  }
  parkedAdd(p: Parameters<Store['parkedAdd']>[0]) {
    return subscriptions.parkedAdd(this.db, p);
  }
  parkedList(p: Parameters<Store['parkedList']>[0]) {
    return subscriptions.parkedList(this.db, p);
  }
  async parkedSetStatus(p: Parameters<Store['parkedSetStatus']>[0]) {
    const parked = await subscriptions.parkedSetStatus(this.db, p);
    this.wake('events', ['']);
    return parked;
  }

  async taskEnqueue(p: Parameters<Store['taskEnqueue']>[0]) {
    const results = await tasks.taskEnqueue(this.db, p);
    this.wake('tasks', new Set(results.filter((r) => r.created).map((r) => r.task.queue)));
    return results;
  }
  taskClaim(p: Parameters<Store['taskClaim']>[0]) {
    return tasks.taskClaim(this.db, p);
  }
  taskHeartbeat(p: Parameters<Store['taskHeartbeat']>[0]) {
    return tasks.taskHeartbeat(this.db, p);
  }
  taskRenew(p: Parameters<Store['taskRenew']>[0]) {
    return tasks.taskRenew(this.db, p);
  }
  async taskComplete(p: Parameters<Store['taskComplete']>[0]) {
    const done = await tasks.taskComplete(this.db, p);
    // the next task of each ordering key is claimable now
    this.wake('tasks', new Set(done.filter((t) => t.orderingKey !== null).map((t) => t.queue)));
    return done;
  }
  async taskCompleteAll(p: Parameters<Store['taskCompleteAll']>[0]) {
    await tasks.taskCompleteAll(this.db, p);
    this.wake('tasks', new Set(p.items.filter((t) => t.orderingKey !== null).map((t) => t.queue)));
  }
  async taskRelease(p: Parameters<Store['taskRelease']>[0]) {
    const released = await tasks.taskRelease(this.db, p);
    this.wake('tasks', new Set(released.map((t) => t.queue)));
    return released.map((t) => t.id);
  }
  async taskFail(p: Parameters<Store['taskFail']>[0]) {
    const task = await tasks.taskFail(this.db, p);
    this.wake('tasks', [task.queue]);
    return task;
  }
  async taskExpire(p: Parameters<Store['taskExpire']>[0]) {
    const expired = await tasks.taskExpire(this.db, p);
    this.wake('tasks', new Set(expired.map((t) => t.queue)));
    return expired;
  }
  taskGet(p: Parameters<Store['taskGet']>[0]) {
    return tasks.taskGet(this.db, p);
  }
  taskList(p: Parameters<Store['taskList']>[0]) {
    return tasks.taskList(this.db, p);
  }
  async taskRedrive(p: Parameters<Store['taskRedrive']>[0]) {
    const result = await tasks.taskRedrive(this.db, p);
    if (result.redriven) this.wake('tasks', [result.task.queue]);
    return result;
  }
  async taskReschedule(p: Parameters<Store['taskReschedule']>[0]) {
    const moved = await tasks.taskReschedule(this.db, p);
    if (moved > 0) this.wake('tasks', [p.queue]);
    return moved;
  }
  taskNextRunAt(p: Parameters<Store['taskNextRunAt']>[0]) {
    return tasks.taskNextRunAt(this.db, p);
  }

  blobPut(p: Parameters<Store['blobPut']>[0]) {
    return blobs.blobPut(this.db, p);
  }
  blobGet(p: Parameters<Store['blobGet']>[0]) {
    return blobs.blobGet(this.db, p);
  }
  blobDelete(p: Parameters<Store['blobDelete']>[0]) {
    return blobs.blobDelete(this.db, p);
  }
  pauseSet(p: Parameters<Store['pauseSet']>[0]) {
    return pauses.pauseSet(this.db, p);
  }
  async pauseDelete(p: Parameters<Store['pauseDelete']>[0]) {
    const resumed = await pauses.pauseDelete(this.db, p);
    // the held-back tasks are claimable now
    if (resumed) this.wake('tasks', ['']);
    return resumed;
  }
  pauseList() {
    return pauses.pauseList(this.db);
  }
  agentEventPut(p: Parameters<Store['agentEventPut']>[0]) {
    return agents.agentEventPut(this.db, p);
  }
  agentEventGet(p: Parameters<Store['agentEventGet']>[0]) {
    return agents.agentEventGet(this.db, p);
  }
  agentEventList(p: Parameters<Store['agentEventList']>[0]) {
    return agents.agentEventList(this.db, p);
  }
  agentEventUpdate(p: Parameters<Store['agentEventUpdate']>[0]) {
    return agents.agentEventUpdate(this.db, p);
  }
  agentRunPut(p: Parameters<Store['agentRunPut']>[0]) {
    return agents.agentRunPut(this.db, p);
  }
  agentRunGet(p: Parameters<Store['agentRunGet']>[0]) {
    return agents.agentRunGet(this.db, p);
  }
  agentRunUpdate(p: Parameters<Store['agentRunUpdate']>[0]) {
    return agents.agentRunUpdate(this.db, p);
  }
  agentRunList(p: Parameters<Store['agentRunList']>[0]) {
    return agents.agentRunList(this.db, p);
  }
  agentStepPut(p: Parameters<Store['agentStepPut']>[0]) {
    return agents.agentStepPut(this.db, p);
  }
  agentStepUpdate(p: Parameters<Store['agentStepUpdate']>[0]) {
    return agents.agentStepUpdate(this.db, p);
  }
  agentStepList(p: Parameters<Store['agentStepList']>[0]) {
    return agents.agentStepList(this.db, p);
  }
  agentToolCallPut(p: Parameters<Store['agentToolCallPut']>[0]) {
    return agents.agentToolCallPut(this.db, p);
  }
  agentToolCallUpdate(p: Parameters<Store['agentToolCallUpdate']>[0]) {
    return agents.agentToolCallUpdate(this.db, p);
  }
  agentToolCallGet(p: Parameters<Store['agentToolCallGet']>[0]) {
    return agents.agentToolCallGet(this.db, p);
  }
  agentToolCallList(p: Parameters<Store['agentToolCallList']>[0]) {
    return agents.agentToolCallList(this.db, p);
  }
  agentCheckpointPut(p: Parameters<Store['agentCheckpointPut']>[0]) {
    return agents.agentCheckpointPut(this.db, p);
  }
  agentCheckpointList(p: Parameters<Store['agentCheckpointList']>[0]) {
    return agents.agentCheckpointList(this.db, p);
  }
  agentRunDelete(p: Parameters<Store['agentRunDelete']>[0]) {
    return agents.agentRunDelete(this.db, p);
  }
  taskStats() {
    return maintenance.taskStats(this.db);
  }
  taskListActiveKeys(p: Parameters<Store['taskListActiveKeys']>[0]) {
    return maintenance.taskListActiveKeys(this.db, p);
  }
  taskDelete(p: Parameters<Store['taskDelete']>[0]) {
    return maintenance.taskDelete(this.db, p);
  }
  subscriptionStats() {
    return maintenance.subscriptionStats(this.db);
  }
  streamDelete(p: Parameters<Store['streamDelete']>[0]) {
    return maintenance.streamDelete(this.db, p);
  }
  eventDeleteBefore(p: Parameters<Store['eventDeleteBefore']>[0]) {
    return maintenance.eventDeleteBefore(this.db, p);
  }
  storageDiagnose(p: Parameters<Store['storageDiagnose']>[0]) {
    return maintenance.storageDiagnose(this.db, p);
  }
  async storageVacuum(p: Parameters<Store['storageVacuum']>[0]) {
    if (this.tx) throw new Error('storageVacuum cannot run inside a transaction');
    if (p.after === 'sweep') await maintenance.storageVacuum(this.db);
  }
  processRegister(p: Parameters<Store['processRegister']>[0]) {
    return processes.processRegister(this.db, p);
  }
  processHeartbeat(p: Parameters<Store['processHeartbeat']>[0]) {
    return processes.processHeartbeat(this.db, p);
  }
  processList() {
    return processes.processList(this.db);
  }
  async processExpire(p: Parameters<Store['processExpire']>[0]) {
    const ended = await processes.processExpire(this.db, p);
    // a subscription's lease ended: subscribers everywhere look at once
    if (ended.subscriptions > 0) this.wake('events', ['']);
    return ended;
  }
}

/** The URL as shown by `runledger status`: the password never leaves the process. */
export function maskPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
    return parsed.toString();
  } catch {
    return url.replace(/password=\S+/gi, 'password=***');
  }
}
