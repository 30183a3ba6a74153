import pg from 'pg';
import { AppendBatch, failed, succeeded, type Outcome } from '../append-batch.js';
import type { ProjectionRow } from '../projections.js';
import type { AppendResult, EventAppendParams, NotifyChannel, Store, StoreStatus } from '../store.js';
import { enqueuedWakeups, taskWakeups, unblockedQueues } from '../tasks.js';
import { appendWakeups } from '../wakeups.js';
import { check, createPool, migrate, poolDb, prepared, send, txDb, type Db, type Tx } from './connection.js';
import * as agents from './agents.js';
import * as enqueue from './enqueue.js';
import * as events from './events.js';
import * as projections from './projections.js';
import * as maintenance from './maintenance.js';
import { Listener, NOTIFY, Notifier, notifyParams } from './notify.js';
import { Puts, putRows } from './puts.js';
import * as processes from './processes.js';
import * as subscriptions from './subscriptions.js';
import * as blobs from './blobs.js';
import * as pauses from './pauses.js';
import * as keys from './keys.js';
import * as rates from './rates.js';
import * as slots from './slots.js';
import * as audit from './audit.js';
import { storeStatus } from './status.js';
import * as tasks from './tasks.js';

export { maskPassword } from './status.js';

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
export async function openPostgresStore(
  url: string,
  options: { poolSize?: number; migrate?: boolean } = {},
): Promise<Store> {
  if (options.migrate !== false) await migrate(url);
  const pool = createPool(url, options.poolSize ?? 10);
  const listener = new Listener(url);
  // pg sets a client's backend pid (not in its types) when it connects
  const pid = (client: pg.PoolClient) => (client as unknown as { processID: number }).processID;
  pool.on('connect', (client) => listener.own.add(pid(client)));
  pool.on('remove', (client) => listener.own.delete(pid(client)));
  return new PostgresStore({ url, pool, poolDb: poolDb(pool), listener, notifier: new Notifier(pool) }, null);
}

class PostgresStore implements Store {
  readonly dialect = 'postgres' as const;
  private readonly db: Db;

  /** Inside a transaction: the wake-ups to send once it has committed. */
  private readonly pending = new Map<string, [NotifyChannel, string]>();
  /** Inside a transaction: what runs once it has committed. */
  private readonly committed: Array<() => void> = [];
  /** Inside a transaction: what runs once it has rolled back or its commit failed. */
  private readonly rolledBack: Array<() => void> = [];
  /** Inside a transaction: its projection writes, sent ahead of its next statement or its `COMMIT`. */
  private readonly puts = new Puts();

  constructor(
    private readonly shared: Shared,
    private readonly tx: Tx | null,
  ) {
    this.db = tx ? txDb(tx, () => this.puts.take()) : shared.poolDb;
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
    const tx: Tx = { client, finished: false, begun: false, unchecked: [], answers: [] };
    let broken: Error | undefined;
    // A checked-out client has no error listener of the pool's: without this, the connection
    // dropping while `fn` awaits something else would be an uncaught exception.
    const onError = (error: Error) => (broken = error);
    client.on('error', onError);
    const txStore = new PostgresStore(this.shared, tx);
    try {
      const result = await fn(txStore)
        .then(async (value) => {
          await txStore.db.atomic(async () => {}); // sends the held projection writes (`ahead`)
          return value;
        })
        .finally(() => (tx.finished = true));
      // the COMMIT follows the writes not checked yet on the wire, the wake-ups follow it: should
      // one fail (a payload over 8000 bytes, a full notification queue), the caller is told
      // "failed" for a write that committed, which is retried (at least once), never "done" for
      // one that did not
      for (const answer of tx.answers.splice(0)) await answer;
      const commit = send(tx, 'COMMIT');
      const notify = txStore.pending.size > 0 ? send(tx, NOTIFY, notifyParams(txStore.pending.values())) : null;
      commit.catch(() => {});
      notify?.catch(() => {});
      await check(tx);
      // a transaction a failed statement aborted answers COMMIT with ROLLBACK, not an error
      if ((await commit).command !== 'COMMIT')
        throw new Error('the transaction was rolled back: one of its statements failed');
      await notify;
      for (const fn of txStore.committed) fn();
      for (const [channel, payload] of txStore.pending.values()) this.shared.listener.deliver(channel, payload);
      return result;
    } catch (error) {
      // A connection that cannot even roll back is destroyed rather than returned to the pool.
      if (tx.begun) await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
      for (const fn of txStore.rolledBack) fn();
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

  onRollback(fn: () => void): void {
    if (this.tx) this.rolledBack.push(fn);
  }

  listen(channel: NotifyChannel, onWake: (payload: string) => void): Promise<() => Promise<void>> {
    return this.shared.listener.add(channel, onWake);
  }

  async now(): Promise<number> {
    const [row] = await this.db.rows<{ now: number }>(NOW);
    return row!.now;
  }

  async status(): Promise<StoreStatus> {
    return storeStatus(this.db, this.shared.url);
  }

  async close(): Promise<void> {
    await this.shared.notifier.drain();
    await this.shared.listener.close();
    if (!this.shared.pool.ended) await this.shared.pool.end();
  }

  /** Appends outside a transaction, batched (see `appendEach`); made at the first. */
  private batch: AppendBatch | null = null;

  eventAppend: Store['eventAppend'] = (p) => {
    if (this.tx || !events.appendsEach(p)) return this.appendAlone(p);
    this.batch ??= new AppendBatch(
      (p) => this.appendAlone(p),
      (batch) => this.appendEach(batch),
      2,
    );
    return this.batch.append(p);
  };

  private async appendAlone(p: EventAppendParams): Promise<AppendResult> {
    const result = await events.eventAppend(this.db, p);
    if (!result.duplicate) this.wake('events', appendWakeups(p, result));
    return result;
  }

  /**
   * Appends in one statement. When the server refuses it (it undid itself), each goes again alone,
   * so the failure is only its own caller's; when the connection fails, whether it committed is
   * unknown, and every caller fails.
   */
  private async appendEach(batch: EventAppendParams[]): Promise<Outcome[]> {
    let results: AppendResult[];
    try {
      results = await events.eventAppendEach(this.db, batch);
    } catch (error) {
      if (!(error instanceof pg.DatabaseError) || error.severity !== 'ERROR') throw error;
      const outcomes: Outcome[] = [];
      for (const p of batch) outcomes.push(await this.appendAlone(p).then(succeeded, failed));
      return outcomes;
    }
    batch.forEach((p, i) => {
      if (!results[i]!.duplicate) this.wake('events', appendWakeups(p, results[i]!));
    });
    return results.map((result) => ({ result }));
  }
  eventReadStream: Store['eventReadStream'] = (p) => events.eventReadStream(this.db, p);
  eventReadAll: Store['eventReadAll'] = (p) => events.eventReadAll(this.db, p);
  eventReadCommitted: Store['eventReadCommitted'] = (p) => events.eventReadCommitted(this.db, p);
  eventHead: Store['eventHead'] = () => events.eventHead(this.db);

  streamList: Store['streamList'] = (p) => events.streamList(this.db, p);
  projectionPut: Store['projectionPut'] = (p) => this.put(p.name, [{ key: p.key, value: p.value }]);
  projectionGet: Store['projectionGet'] = (p) => projections.projectionGet(this.db, p);
  projectionList: Store['projectionList'] = (p) => projections.projectionList(this.db, p);
  projectionListRecent: Store['projectionListRecent'] = (p) => projections.projectionListRecent(this.db, p);
  projectionDelete: Store['projectionDelete'] = (p) => projections.projectionDelete(this.db, p);
  projectionGetMany: Store['projectionGetMany'] = (p) => projections.projectionGetMany(this.db, p);
  projectionPutMany: Store['projectionPutMany'] = (p) => this.put(p.name, p.rows);

  /** In a transaction, held until its next statement (`Puts`); outside one, written at once. */
  private async put(name: string, rows: ProjectionRow[]): Promise<void> {
    if (this.tx) this.puts.add(name, rows);
    else await putRows(this.db, name, rows);
  }

  subscriptionEnsure: Store['subscriptionEnsure'] = (p) => subscriptions.subscriptionEnsure(this.db, p);
  subscriptionLease: Store['subscriptionLease'] = (p) => subscriptions.subscriptionLease(this.db, p);
  subscriptionRelease: Store['subscriptionRelease'] = (p) => subscriptions.subscriptionRelease(this.db, p);
  subscriptionAdvance: Store['subscriptionAdvance'] = (p) => subscriptions.subscriptionAdvance(this.db, p);
  subscriptionBlock: Store['subscriptionBlock'] = (p) => subscriptions.subscriptionBlock(this.db, p);
  subscriptionGet: Store['subscriptionGet'] = (p) => subscriptions.subscriptionGet(this.db, p);
  subscriptionList: Store['subscriptionList'] = () => subscriptions.subscriptionList(this.db);
  parkedAdd: Store['parkedAdd'] = (p) => subscriptions.parkedAdd(this.db, p);
  parkedList: Store['parkedList'] = (p) => subscriptions.parkedList(this.db, p);
  parkedSetStatus: Store['parkedSetStatus'] = async (p) => {
    const parked = await subscriptions.parkedSetStatus(this.db, p);
    this.wake('events', ['']);
    return parked;
  };

  taskEnqueue: Store['taskEnqueue'] = async (p) => {
    // a big one in a transaction of its own: its statements go pipelined (`enqueue.taskEnqueue`)
    if (!this.tx && (p.tasks.length >= 2 * enqueue.PIPELINED || enqueue.needsTransaction(p.tasks)))
      return this.transaction((tx) => tx.taskEnqueue(p));
    const results = await enqueue.taskEnqueue(this.db, p);
    // a task claimed as it was inserted is no news for workers
    this.wake('tasks', new Set(results.filter((r) => r.created && r.task.state === 'ready').map((r) => r.task.queue)));
    this.wake('events', enqueuedWakeups(results));
    return results;
  };
  taskClaim: Store['taskClaim'] = (p) => tasks.taskClaim(this.db, p);
  taskHeartbeat: Store['taskHeartbeat'] = (p) => tasks.taskHeartbeat(this.db, p);
  taskHold: Store['taskHold'] = (p) => tasks.taskHold(this.db, p);
  taskComplete: Store['taskComplete'] = async (p) => {
    const done = await tasks.taskComplete(this.db, p);
    // the next task of an ordering key is claimable now
    this.wake('tasks', unblockedQueues(done));
    this.wake('events', taskWakeups(done.map((t) => t.id)));
    return done;
  };
  taskCompleteAll: Store['taskCompleteAll'] = async (p) => {
    await tasks.taskCompleteAll(this.db, p, (queues) => this.wake('tasks', queues));
    this.wake('events', taskWakeups(p.items.map((i) => i.id)));
  };
  taskRelease: Store['taskRelease'] = async (p) => {
    const released = await tasks.taskRelease(this.db, p);
    this.wake('tasks', new Set(released.map((t) => t.queue)));
    return released.map((t) => t.id);
  };
  taskFail: Store['taskFail'] = async (p) => {
    const task = await tasks.taskFail(this.db, p);
    this.wake('tasks', [task.queue]);
    return task;
  };
  taskExpire: Store['taskExpire'] = async (p) => {
    const expired = await tasks.taskExpire(this.db, p);
    this.wake('tasks', new Set(expired.map((t) => t.queue)));
    return expired;
  };
  taskGet: Store['taskGet'] = (p) => tasks.taskGet(this.db, p);
  taskList: Store['taskList'] = (p) => tasks.taskList(this.db, p);
  taskRedrive: Store['taskRedrive'] = async (p) => {
    const result = await tasks.taskRedrive(this.db, p);
    if (result.redriven) this.wake('tasks', [result.task.queue]);
    return result;
  };
  taskReschedule: Store['taskReschedule'] = async (p) => {
    const moved = await tasks.taskReschedule(this.db, p);
    if (moved > 0) this.wake('tasks', [p.queue]);
    return moved;
  };
  taskDueIn: Store['taskDueIn'] = (p) => tasks.taskDueIn(this.db, p);
  queueLimitSet: Store['queueLimitSet'] = async (p) => {
    await tasks.queueLimitSet(this.db, p);
    // a limit raised or removed frees slots
    this.wake('tasks', [p.queue]);
  };
  queueLimitList: Store['queueLimitList'] = (p = {}) => tasks.queueLimitList(this.db, p);
  blobPut: Store['blobPut'] = (p) => blobs.blobPut(this.db, p);
  blobGet: Store['blobGet'] = (p) => blobs.blobGet(this.db, p);
  blobDelete: Store['blobDelete'] = (p) => blobs.blobDelete(this.db, p);
  pauseSet: Store['pauseSet'] = (p) => pauses.pauseSet(this.db, p);
  pauseDelete: Store['pauseDelete'] = async (p) => {
    const resumed = await pauses.pauseDelete(this.db, p);
    // the held-back tasks are claimable now
    if (resumed) this.wake('tasks', ['']);
    return resumed;
  };
  pauseList: Store['pauseList'] = () => pauses.pauseList(this.db);
  auditAppend: Store['auditAppend'] = (p) => audit.auditAppend(this.db, p);
  auditList: Store['auditList'] = (p) => audit.auditList(this.db, p);
  auditPrune: Store['auditPrune'] = (p) => audit.auditPrune(this.db, p);
  apiKeyInsert: Store['apiKeyInsert'] = (p) => keys.apiKeyInsert(this.db, p);
  apiKeyList: Store['apiKeyList'] = () => keys.apiKeyList(this.db);
  apiKeyFind: Store['apiKeyFind'] = (p) => keys.apiKeyFind(this.db, p);
  apiKeyUpdate: Store['apiKeyUpdate'] = (p) => keys.apiKeyUpdate(this.db, p);
  agentEventPut: Store['agentEventPut'] = (p) => agents.agentEventPut(this.db, p);
  agentEventGet: Store['agentEventGet'] = (p) => agents.agentEventGet(this.db, p);
  agentEventList: Store['agentEventList'] = (p) => agents.agentEventList(this.db, p);
  agentEventPage: Store['agentEventPage'] = (p) => agents.agentEventPage(this.db, p);
  agentEventRedrive: Store['agentEventRedrive'] = (p) => agents.agentEventRedrive(this.db, p);
  agentEventUpdate: Store['agentEventUpdate'] = (p) => agents.agentEventUpdate(this.db, p);
  agentRunPut: Store['agentRunPut'] = (p) => agents.agentRunPut(this.db, p);
  agentRunGet: Store['agentRunGet'] = (p) => agents.agentRunGet(this.db, p);
  agentRunUpdate: Store['agentRunUpdate'] = (p) => agents.agentRunUpdate(this.db, p);
  agentRunList: Store['agentRunList'] = (p) => agents.agentRunList(this.db, p);
  agentStepPut: Store['agentStepPut'] = (p) => agents.agentStepPut(this.db, p);
  agentStepUpdate: Store['agentStepUpdate'] = (p) => agents.agentStepUpdate(this.db, p);
  agentStepList: Store['agentStepList'] = (p) => agents.agentStepList(this.db, p);
  agentToolCallPut: Store['agentToolCallPut'] = (p) => agents.agentToolCallPut(this.db, p);
  agentToolCallUpdate: Store['agentToolCallUpdate'] = (p) => agents.agentToolCallUpdate(this.db, p);
  agentToolCallGet: Store['agentToolCallGet'] = (p) => agents.agentToolCallGet(this.db, p);
  agentToolCallList: Store['agentToolCallList'] = (p) => agents.agentToolCallList(this.db, p);
  agentCheckpointPut: Store['agentCheckpointPut'] = (p) => agents.agentCheckpointPut(this.db, p);
  agentCheckpointList: Store['agentCheckpointList'] = (p) => agents.agentCheckpointList(this.db, p);
  agentRunDelete: Store['agentRunDelete'] = (p) => agents.agentRunDelete(this.db, p);
  taskStats: Store['taskStats'] = () => maintenance.taskStats(this.db);
  taskListActiveKeys: Store['taskListActiveKeys'] = (p) => maintenance.taskListActiveKeys(this.db, p);
  taskDelete: Store['taskDelete'] = (p) => maintenance.taskDelete(this.db, p);
  subscriptionStats: Store['subscriptionStats'] = () => maintenance.subscriptionStats(this.db);
  streamDelete: Store['streamDelete'] = (p) => maintenance.streamDelete(this.db, p);
  eventDeleteBefore: Store['eventDeleteBefore'] = (p) => maintenance.eventDeleteBefore(this.db, p);
  storageDiagnose: Store['storageDiagnose'] = (p) => maintenance.storageDiagnose(this.db, p);
  storageVacuum: Store['storageVacuum'] = async (p) => {
    if (this.tx) throw new Error('storageVacuum cannot run inside a transaction');
    if (p.after === 'sweep') await maintenance.storageVacuum(this.db);
  };
  processRegister: Store['processRegister'] = (p) => processes.processRegister(this.db, p);
  processHeartbeat: Store['processHeartbeat'] = (p) => processes.processHeartbeat(this.db, p);
  processList: Store['processList'] = () => processes.processList(this.db);
  processExpire: Store['processExpire'] = async (p) => {
    const ended = await processes.processExpire(this.db, p);
    // a subscription's lease ended: subscribers everywhere look at once
    if (ended.subscriptions > 0) this.wake('events', ['']);
    return ended;
  };
  slotLock: Store['slotLock'] = (p) => slots.slotLock(this.db, p);
  /** In a transaction, held until its next statement (`Puts`); outside one, written at once. */
  slotPut: Store['slotPut'] = async (p) => {
    if (this.tx) return this.puts.addSlot(p.slot, p.state);
    const held = new Puts();
    held.addSlot(p.slot, p.state);
    await held.take()!(this.db);
  };
  slotGet: Store['slotGet'] = (p) => slots.slotGet(this.db, p);
  slotList: Store['slotList'] = (p) => slots.slotList(this.db, p);
  slotWaiterAdd: Store['slotWaiterAdd'] = (p) => slots.slotWaiterAdd(this.db, p);
  slotWaiterList: Store['slotWaiterList'] = (p) => slots.slotWaiterList(this.db, p);
  slotWaiterDelete: Store['slotWaiterDelete'] = (p) => slots.slotWaiterDelete(this.db, p);
  rateLimitPut: Store['rateLimitPut'] = (p) => rates.rateLimitPut(this.db, p);
  rateLimitGet: Store['rateLimitGet'] = (p) => rates.rateLimitGet(this.db, p);
  rateLimitList: Store['rateLimitList'] = () => rates.rateLimitList(this.db);
  rateLimitDelete: Store['rateLimitDelete'] = (p) =>
    this.inTransaction(
      (tx) => tx.rateLimitDelete(p),
      (db) => rates.rateLimitDelete(db, p),
    );
  rateTake: Store['rateTake'] = (p) =>
    this.inTransaction(
      (tx) => tx.rateTake(p),
      (db) => rates.rateTake(db, p),
    );
  rateDefer: Store['rateDefer'] = (p) =>
    this.inTransaction(
      (tx) => tx.rateDefer(p),
      (db) => rates.rateDefer(db, p),
    );
  rateCharge: Store['rateCharge'] = (p) =>
    this.inTransaction(
      (tx) => tx.rateCharge(p),
      (db) => rates.rateCharge(db, p),
    );

  /** Several statements that must hold together: in this transaction (atomic among its other callers), or a new one. */
  private inTransaction<T>(outside: (tx: Store) => Promise<T>, inside: (db: Db) => Promise<T>): Promise<T> {
    return this.tx ? this.db.atomic(inside) : this.transaction(outside);
  }
}
