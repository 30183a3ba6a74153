import { AppendBatch, type Outcome } from '../append-batch.js';
import type { AppendResult, CompletedTask, EventAppendParams, NotifyChannel, Store, StoreStatus } from '../store.js';
import { enqueuedWakeups, taskWakeups, unblockedQueues } from '../tasks.js';
import { appendWakeups } from '../wakeups.js';
import type { Statements } from './connection.js';
import { announce, closeShared, countCommit, openShared, type Shared } from './shared.js';
import * as blobs from './blobs.js';
import * as agents from './agents.js';
import * as events from './events.js';
import * as projections from './projections.js';
import * as pauses from './pauses.js';
import * as keys from './keys.js';
import * as rates from './rates.js';
import * as slots from './slots.js';
import * as audit from './audit.js';
import * as maintenance from './maintenance.js';
import * as processes from './processes.js';
import * as subscriptions from './subscriptions.js';
import * as tasks from './tasks.js';

/**
 * The embedded backend: one SQLite file in WAL mode. Every operation runs under one in-process
 * lock, so an open asynchronous transaction is never seen half-done by another caller. A write
 * waits for other processes on the same file without holding the event loop, and is refused as
 * busy after BUSY_DEADLINE_MS (busy.ts).
 *
 * @example const store = openSqliteStore('runledger.db')
 */
export function openSqliteStore(path: string, options: { migrate?: boolean; clock?: SqliteClock } = {}): Store {
  const shared = openShared(path, options);
  const { clock } = options;
  if (!clock) return new SqliteStore(shared, null, () => Date.now());
  // tasks may have come due: every worker on this connection looks ('' wakes each queue)
  clock.onJump(() => announce(shared.listeners, [['tasks', new Set([''])]]));
  return new SqliteStore(shared, null, () => clock.now());
}

/**
 * The time a SQLite store reads instead of the process's, for tests (`createTestEngine` in
 * runledger/testing): it stands still until the test moves it, and each move wakes the store's workers.
 */
export interface SqliteClock {
  /** ms since the epoch. */
  now(): number;
  /** Calls `wake` after each move of the clock. */
  onJump(wake: () => void): void;
}

/** A channel and the payloads to wake it with. */
type Wake = [NotifyChannel, ...string[]];

/** A completion's wake-ups: the queues where a completed task's key has its next one ready, and the completed tasks' streams. */
function completedWakes(done: CompletedTask[]): Wake[] {
  return [
    ['tasks', ...unblockedQueues(done)],
    ['events', ...taskWakeups(done.map((t) => t.id))],
  ];
}

class SqliteStore implements Store {
  readonly dialect = 'sqlite' as const;
  private finished = false;
  /** Inside a transaction: what runs once it has committed, and once it has rolled back. */
  private readonly committed: Array<() => void> = [];
  private readonly rolledBack: Array<() => void> = [];
  /** Inside a transaction: the keys' states `slotPut` gave, written once each before its commit or a read of them. */
  private readonly slotPuts = new Map<string, unknown>();

  constructor(
    private readonly shared: Shared,
    /** set inside a transaction: the notifications to send after it commits */
    private readonly pending: Map<NotifyChannel, Set<string>> | null,
    /** The database clock: `Date.now`, or a test's (`SqliteClock`). */
    readonly clock: () => number,
  ) {}

  /** A write: atomic on its own, or part of the transaction this store belongs to; `wakeups` go out once it committed (one channel's, or those its result names). */
  private async run<T>(fn: (s: Statements, now: number) => T, wakeups?: Wake | ((result: T) => Wake[])): Promise<T> {
    const { db, statements } = this.shared;
    const notifyOf = (result: T): Wake[] =>
      typeof wakeups === 'function' ? wakeups(result) : wakeups ? [wakeups] : [];
    if (this.pending) {
      if (this.finished) throw new Error('this transaction has already finished');
      const result = fn(statements, this.clock());
      for (const [channel, ...payloads] of notifyOf(result))
        for (const payload of payloads) addPending(this.pending, [channel, payload]);
      return result;
    }
    const release = await this.shared.turns.write(() => statements.get('BEGIN IMMEDIATE').run());
    let result: T;
    try {
      try {
        result = fn(statements, this.clock());
        statements.get('COMMIT').run();
        countCommit(this.shared);
      } catch (error) {
        if (db.inTransaction) statements.get('ROLLBACK').run();
        throw error;
      }
    } finally {
      release();
    }
    const notify = notifyOf(result);
    if (notify.length > 0)
      announce(
        this.shared.listeners,
        notify.map(([channel, ...payloads]) => [channel, new Set(payloads)]),
      );
    return result;
  }

  /** A read: no write lock, but still behind the in-process lock so it never sees an open transaction's rows. */
  private async read<T>(fn: (s: Statements) => T): Promise<T> {
    if (this.pending) {
      if (this.finished) throw new Error('this transaction has already finished');
      return fn(this.shared.statements);
    }
    // WAL: a read needs no write lock. It finds the file busy only in a moment such as another
    // process recovering the WAL index; should that outlast BUSY_TIMEOUT_MS, it answers busy (503).
    const release = await this.shared.lock.acquire();
    try {
      return fn(this.shared.statements);
    } finally {
      release();
    }
  }

  async transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    if (this.pending) return fn(this);
    const { db, statements, turns, listeners } = this.shared;
    const release = await turns.write(() => statements.get('BEGIN IMMEDIATE').run());
    const tx = new SqliteStore(this.shared, new Map(), this.clock);
    let result: T;
    try {
      try {
        result = await fn(tx);
        tx.writeSlots(statements);
        statements.get('COMMIT').run();
        countCommit(this.shared);
      } catch (error) {
        if (db.inTransaction) statements.get('ROLLBACK').run();
        for (const fn of tx.rolledBack) fn();
        throw error;
      }
    } finally {
      tx.finished = true;
      release();
    }
    for (const fn of tx.committed) fn();
    if (tx.pending?.size) announce(listeners, [...tx.pending]);
    return result;
  }

  onCommit(fn: () => void): void {
    if (this.pending) this.committed.push(fn);
    else fn();
  }

  onRollback(fn: () => void): void {
    if (this.pending) this.rolledBack.push(fn);
  }

  async listen(
    channel: NotifyChannel,
    onWake: (payload: string, version?: number) => void,
  ): Promise<() => Promise<void>> {
    // a callback of its own: one listener registered twice is woken twice, and each unlisten removes its own
    const callback = (stream: string, version?: number) => onWake(stream, version);
    this.shared.listeners[channel].add(callback);
    return async () => void this.shared.listeners[channel].delete(callback);
  }

  async now(): Promise<number> {
    return this.clock();
  }

  status(): Promise<StoreStatus> {
    return this.read((s) => {
      const count = (sql: string) => (s.get(sql).get() as { n: number }).n;
      return {
        dialect: 'sqlite' as const,
        location: this.shared.path,
        schemaVersion: count('SELECT max(version) AS n FROM schema_migrations'),
        events: count('SELECT count(*) AS n FROM events'),
        streams: count('SELECT count(*) AS n FROM streams'),
        tasks: tasks.taskCounts(s),
        subscriptions: count('SELECT count(*) AS n FROM subscriptions'),
      };
    });
  }

  private closed = false;

  async close(): Promise<void> {
    if (this.closed || this.pending) return;
    this.closed = true;
    await closeShared(this.shared);
  }

  /** Appends outside a transaction, batched (see `appendEach`); made at the first. */
  private batch: AppendBatch | null = null;

  eventAppend: Store['eventAppend'] = (p) => {
    if (this.pending) return this.appendAlone(p);
    this.batch ??= new AppendBatch(
      (p) => this.appendAlone(p),
      (batch) => this.appendEach(batch),
      1,
    );
    return this.batch.append(p);
  };

  private appendAlone(p: EventAppendParams): Promise<AppendResult> {
    return this.run(
      (s, now) => events.eventAppend(s, now, p),
      (result) => (result.duplicate ? [] : [['events', ...appendWakeups(p, result)]]),
    );
  }

  /**
   * Appends in one transaction, each in a savepoint of its own: one that fails (a version
   * mismatch) is undone and fails alone, the others commit.
   */
  private appendEach(batch: EventAppendParams[]): Promise<Outcome[]> {
    const payloads: string[] = [];
    return this.run(
      (s, now) =>
        batch.map((p): Outcome => {
          s.get('SAVEPOINT append').run();
          try {
            const result = events.eventAppend(s, now, p);
            s.get('RELEASE append').run();
            if (!result.duplicate) payloads.push(...appendWakeups(p, result));
            return { result };
          } catch (error) {
            s.get('ROLLBACK TO append').run();
            s.get('RELEASE append').run();
            return { error };
          }
        }),
      () => [['events', ...payloads]],
    );
  }
  eventReadStream: Store['eventReadStream'] = (p) => this.read((s) => events.eventReadStream(s, p));
  eventReadAll: Store['eventReadAll'] = (p) => this.read((s) => events.eventReadAll(s, p));
  eventReadCommitted: Store['eventReadCommitted'] = (p) => this.read((s) => events.eventReadCommitted(s, p));
  eventHead: Store['eventHead'] = () => this.read((s) => events.eventHead(s));

  streamList: Store['streamList'] = (p) => this.read((s) => events.streamList(s, p));
  projectionPut: Store['projectionPut'] = (p) => this.run((s, now) => projections.projectionPut(s, now, p));
  projectionGet: Store['projectionGet'] = (p) => this.read((s) => projections.projectionGet(s, p));
  projectionList: Store['projectionList'] = (p) => this.read((s) => projections.projectionList(s, p));
  projectionListRecent: Store['projectionListRecent'] = (p) => this.read((s) => projections.projectionListRecent(s, p));
  projectionDelete: Store['projectionDelete'] = (p) => this.run((s) => projections.projectionDelete(s, p));
  projectionGetMany: Store['projectionGetMany'] = (p) => this.read((s) => projections.projectionGetMany(s, p));
  projectionPutMany: Store['projectionPutMany'] = (p) => this.run((s, now) => projections.projectionPutMany(s, now, p));

  subscriptionEnsure: Store['subscriptionEnsure'] = (p) =>
    this.run((s, now) => subscriptions.subscriptionEnsure(s, now, p, events.eventHead(s)));
  subscriptionLease: Store['subscriptionLease'] = (p) =>
    this.run((s, now) => subscriptions.subscriptionLease(s, now, p));
  subscriptionRelease: Store['subscriptionRelease'] = (p) => this.run((s) => subscriptions.subscriptionRelease(s, p));
  subscriptionAdvance: Store['subscriptionAdvance'] = (p) =>
    this.run((s, now) => subscriptions.subscriptionAdvance(s, now, p));
  subscriptionBlock: Store['subscriptionBlock'] = (p) =>
    this.run((s, now) => subscriptions.subscriptionBlock(s, now, p));
  subscriptionGet: Store['subscriptionGet'] = (p) => this.read((s) => subscriptions.subscriptionGet(s, p));
  subscriptionList: Store['subscriptionList'] = () => this.read((s) => subscriptions.subscriptionList(s));
  parkedAdd: Store['parkedAdd'] = (p) => this.run((s, now) => subscriptions.parkedAdd(s, now, p));
  parkedList: Store['parkedList'] = (p) => this.read((s) => subscriptions.parkedList(s, p));
  parkedSetStatus: Store['parkedSetStatus'] = (p) =>
    this.run((s, now) => subscriptions.parkedSetStatus(s, now, p), ['events', '']);

  taskEnqueue: Store['taskEnqueue'] = (p) =>
    this.run(
      (s, now) => tasks.taskEnqueue(s, now, p),
      (results) => [
        // a task claimed as it was inserted is no news for workers
        ['tasks', ...new Set(results.filter((r) => r.created && r.task.state === 'ready').map((r) => r.task.queue))],
        ['events', ...enqueuedWakeups(results)],
      ],
    );
  taskClaim: Store['taskClaim'] = (p) => this.run((s, now) => tasks.taskClaim(s, now, p));
  taskHeartbeat: Store['taskHeartbeat'] = (p) => this.run((s, now) => tasks.taskHeartbeat(s, now, p));
  taskHold: Store['taskHold'] = (p) => this.read((s) => tasks.taskHold(s, p));
  // the next task of each ordering key is claimable now: the queue's workers are woken (taskDueIn leaves it out)
  taskComplete: Store['taskComplete'] = (p) => this.run((s, now) => tasks.taskComplete(s, now, p), completedWakes);
  taskCompleteAll: Store['taskCompleteAll'] = (p) =>
    this.run((s, now) => tasks.taskCompleteAll(s, now, p), completedWakes).then(() => undefined);
  taskRelease: Store['taskRelease'] = (p) =>
    this.run(
      (s, now) => tasks.taskRelease(s, now, p),
      (released) => [['tasks', ...new Set(released.map((t) => t.queue))]],
    ).then((released) => released.map((t) => t.id));
  taskFail: Store['taskFail'] = (p) => this.run((s, now) => tasks.taskFail(s, now, p), ['tasks', '']);
  taskExpire: Store['taskExpire'] = (p) => this.run((s, now) => tasks.taskExpire(s, now, p), ['tasks', '']);
  taskGet: Store['taskGet'] = (p) => this.read((s) => tasks.taskGet(s, p));
  taskList: Store['taskList'] = (p) => this.read((s) => tasks.taskList(s, p));
  taskRedrive: Store['taskRedrive'] = (p) => this.run((s, now) => tasks.taskRedrive(s, now, p), ['tasks', '']);
  taskReschedule: Store['taskReschedule'] = (p) => this.run((s) => tasks.taskReschedule(s, p), ['tasks', p.queue]);
  taskDueIn: Store['taskDueIn'] = (p) => this.read((s) => tasks.taskDueIn(s, this.clock(), p));
  // a limit raised or removed frees slots: the queue's workers are woken
  queueLimitSet: Store['queueLimitSet'] = (p) =>
    this.run((s, now) => tasks.queueLimitSet(s, now, p), ['tasks', p.queue]);
  queueLimitList: Store['queueLimitList'] = (p = {}) => this.read((s) => tasks.queueLimitList(s, p));

  blobPut: Store['blobPut'] = (p) => this.run((s, now) => blobs.blobPut(s, now, p));
  blobGet: Store['blobGet'] = (p) => this.read((s) => blobs.blobGet(s, p));
  blobDelete: Store['blobDelete'] = (p) => this.run((s) => blobs.blobDelete(s, p));
  // a resume makes the held-back tasks claimable: wake the workers
  pauseSet: Store['pauseSet'] = (p) => this.run((s, now) => pauses.pauseSet(s, now, p));
  pauseDelete: Store['pauseDelete'] = (p) => this.run((s) => pauses.pauseDelete(s, p), ['tasks', '']);
  pauseList: Store['pauseList'] = () => this.read((s) => pauses.pauseList(s));
  apiKeyInsert: Store['apiKeyInsert'] = (p) => this.run((s, now) => keys.apiKeyInsert(s, now, p));
  apiKeyList: Store['apiKeyList'] = () => this.read((s) => keys.apiKeyList(s));
  apiKeyFind: Store['apiKeyFind'] = (p) => this.read((s) => keys.apiKeyFind(s, p));
  apiKeyUpdate: Store['apiKeyUpdate'] = (p) => this.run((s, now) => keys.apiKeyUpdate(s, now, p));
  agentEventPut: Store['agentEventPut'] = (p) => this.run((s) => agents.agentEventPut(s, p));
  agentEventGet: Store['agentEventGet'] = (p) => this.read((s) => agents.agentEventGet(s, p));
  agentEventList: Store['agentEventList'] = (p) => this.read((s) => agents.agentEventList(s, p));
  agentEventPage: Store['agentEventPage'] = (p) => this.read((s) => agents.agentEventPage(s, p));
  agentEventRedrive: Store['agentEventRedrive'] = (p) => this.run((s) => agents.agentEventRedrive(s, p));
  agentEventUpdate: Store['agentEventUpdate'] = (p) => this.run((s) => agents.agentEventUpdate(s, p));
  agentRunPut: Store['agentRunPut'] = (p) => this.run((s) => agents.agentRunPut(s, p));
  agentRunGet: Store['agentRunGet'] = (p) => this.read((s) => agents.agentRunGet(s, p));
  agentRunUpdate: Store['agentRunUpdate'] = (p) => this.run((s) => agents.agentRunUpdate(s, p));
  agentRunList: Store['agentRunList'] = (p) => this.read((s) => agents.agentRunList(s, p));
  agentStepPut: Store['agentStepPut'] = (p) => this.run((s) => agents.agentStepPut(s, p));
  agentStepUpdate: Store['agentStepUpdate'] = (p) => this.run((s) => agents.agentStepUpdate(s, p));
  agentStepList: Store['agentStepList'] = (p) => this.read((s) => agents.agentStepList(s, p));
  agentToolCallPut: Store['agentToolCallPut'] = (p) => this.run((s) => agents.agentToolCallPut(s, p));
  agentToolCallUpdate: Store['agentToolCallUpdate'] = (p) => this.run((s) => agents.agentToolCallUpdate(s, p));
  agentToolCallGet: Store['agentToolCallGet'] = (p) => this.read((s) => agents.agentToolCallGet(s, p));
  agentToolCallList: Store['agentToolCallList'] = (p) => this.read((s) => agents.agentToolCallList(s, p));
  agentCheckpointPut: Store['agentCheckpointPut'] = (p) => this.run((s) => agents.agentCheckpointPut(s, p));
  agentCheckpointList: Store['agentCheckpointList'] = (p) => this.read((s) => agents.agentCheckpointList(s, p));
  agentRunDelete: Store['agentRunDelete'] = (p) => this.run((s) => agents.agentRunDelete(s, p));
  taskStats: Store['taskStats'] = () => this.read((s) => maintenance.taskStats(s, this.clock()));
  taskListActiveKeys: Store['taskListActiveKeys'] = (p) => this.read((s) => maintenance.taskListActiveKeys(s, p));
  taskDelete: Store['taskDelete'] = (p) => this.run((s) => maintenance.taskDelete(s, p));
  subscriptionStats: Store['subscriptionStats'] = () =>
    this.read((s) => maintenance.subscriptionStats(s, this.clock()));
  streamDelete: Store['streamDelete'] = (p) => this.run((s) => maintenance.streamDelete(s, p));
  eventDeleteBefore: Store['eventDeleteBefore'] = (p) => this.run((s) => maintenance.eventDeleteBefore(s, p));
  storageDiagnose: Store['storageDiagnose'] = () => this.read((s) => maintenance.storageDiagnose(s));
  storageVacuum: Store['storageVacuum'] = async () => {
    if (this.pending) throw new Error('storageVacuum cannot run inside a transaction');
    // a write that commits on its own: it waits for the write lock as a transaction's BEGIN does
    (await this.shared.turns.write(() => maintenance.storageVacuum(this.shared.statements)))();
  };
  processRegister: Store['processRegister'] = (p) => this.run((s, now) => processes.processRegister(s, now, p));
  processHeartbeat: Store['processHeartbeat'] = (p) => this.run((s, now) => processes.processHeartbeat(s, now, p));
  processList: Store['processList'] = () => this.read((s) => processes.processList(s));
  // a subscription's lease ended: its subscribers here look at once
  processExpire: Store['processExpire'] = (p) =>
    this.run(
      (s, now) => processes.processExpire(s, now, p),
      (ended) => (ended.subscriptions > 0 ? [['events', '']] : []),
    );
  slotLock: Store['slotLock'] = (p) => this.run((s) => (this.writeSlots(s), slots.slotLock(s, p)));
  // a key's starts and ends in one transaction (a group commit's batch) write its state once, at the commit
  slotPut: Store['slotPut'] = async (p) => {
    if (!this.pending) return this.run((s) => slots.slotPut(s, p));
    if (this.finished) throw new Error('this transaction has already finished');
    this.slotPuts.set(p.slot, p.state);
  };
  slotGet: Store['slotGet'] = (p) => this.read((s) => (this.writeSlots(s), slots.slotGet(s, p)));
  slotList: Store['slotList'] = (p) => this.read((s) => (this.writeSlots(s), slots.slotList(s, p)));

  private writeSlots(s: Statements): void {
    for (const [slot, state] of this.slotPuts) slots.slotPut(s, { slot, state });
    this.slotPuts.clear();
  }
  slotWaiterAdd: Store['slotWaiterAdd'] = (p) => this.run((s) => slots.slotWaiterAdd(s, p));
  slotWaiterList: Store['slotWaiterList'] = (p) => this.read((s) => slots.slotWaiterList(s, p));
  slotWaiterDelete: Store['slotWaiterDelete'] = (p) => this.run((s) => slots.slotWaiterDelete(s, p));
  rateLimitPut: Store['rateLimitPut'] = (p) => this.run((s, now) => rates.rateLimitPut(s, now, p));
  rateLimitGet: Store['rateLimitGet'] = (p) => this.read((s) => rates.rateLimitGet(s, p));
  rateLimitList: Store['rateLimitList'] = () => this.read((s) => rates.rateLimitList(s));
  rateLimitDelete: Store['rateLimitDelete'] = (p) => this.run((s) => rates.rateLimitDelete(s, p));
  rateTake: Store['rateTake'] = (p) => this.run((s, now) => rates.rateTake(s, now, p));
  rateDefer: Store['rateDefer'] = (p) => this.run((s) => rates.rateDefer(s, p));
  rateCharge: Store['rateCharge'] = (p) => this.run((s, now) => rates.rateCharge(s, now, p));
  auditAppend: Store['auditAppend'] = (p) => this.run((s, now) => audit.auditAppend(s, now, p));
  auditList: Store['auditList'] = (p) => this.read((s) => audit.auditList(s, p));
  auditPrune: Store['auditPrune'] = (p) => this.run((s) => audit.auditPrune(s, p));
}

function addPending(pending: Map<NotifyChannel, Set<string>>, [channel, payload]: [NotifyChannel, string]): void {
  let payloads = pending.get(channel);
  if (!payloads) pending.set(channel, (payloads = new Set()));
  payloads.add(payload);
}
