import { EventEmitter } from 'node:events';
import { resolve } from 'node:path';
import type { NotifyChannel, Store, StoreStatus } from '../store.js';
import { appendWakeups, parseWakeups } from '../wakeups.js';
import { openDatabase, Statements, type Db } from './connection.js';
import * as blobs from './blobs.js';
import * as agents from './agents.js';
import * as events from './events.js';
import * as pauses from './pauses.js';
import * as maintenance from './maintenance.js';
import * as processes from './processes.js';
import * as subscriptions from './subscriptions.js';
import * as tasks from './tasks.js';

/** One connection per file per process, shared by every store opened on it; `lock` serializes its users. */
interface Shared {
  path: string;
  db: Db;
  statements: Statements;
  lock: Mutex;
  wake: EventEmitter;
  users: number;
}

// A second connection to the same file in one process would deadlock: better-sqlite3 waits for
// SQLite's write lock synchronously, so the event loop could never finish the transaction that
// holds it. Stores opened on one file in one process therefore share its connection.
const open = new Map<string, Shared>();

class Mutex {
  private tail: Promise<void> = Promise.resolve();

  acquire(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const previous = this.tail;
    this.tail = previous.then(() => held);
    return previous.then(() => release);
  }
}

/**
 * The embedded backend: one SQLite file in WAL mode. Every operation runs under one in-process
 * lock, so an open asynchronous transaction is never seen half-done by another caller; other
 * processes on the same file wait on SQLite's own write lock (busy timeout 10 s).
 *
 * @example const store = openSqliteStore('runledger.db')
 */
export function openSqliteStore(path: string, options: { migrate?: boolean } = {}): Store {
  const key = path === ':memory:' ? null : resolve(path);
  let shared = key === null ? undefined : open.get(key);
  if (!shared) {
    const db = openDatabase(path, options);
    const wake = new EventEmitter();
    wake.setMaxListeners(0);
    shared = { path, db, statements: new Statements(db), lock: new Mutex(), wake, users: 0 };
    if (key !== null) open.set(key, shared);
  }
  shared.users += 1;
  return new SqliteStore(shared, null);
}

/**
 * Wake-ups go out in the next turn of the event loop, as PostgreSQL's arrive after the commit: by
 * then the writer has its result (a pass knows the versions it wrote, so its own wake-ups cost
 * no read).
 */
function announce(wake: EventEmitter, pending: Array<[NotifyChannel, Set<string>]>): void {
  setImmediate(() => {
    for (const [channel, payloads] of pending) for (const payload of payloads) wake.emit(channel, payload);
  });
}

/**
 * The store's operations are methods, not arrow properties: every transaction makes a store of its
 * own, and allocating some 70 closures for each one took a tenth of a step's CPU (profiled under tsx).
 */
class SqliteStore implements Store {
  readonly dialect = 'sqlite' as const;
  private finished = false;
  /** Inside a transaction: what runs once it has committed. */
  private readonly committed: Array<() => void> = [];

  constructor(
    private readonly shared: Shared,
    /** set inside a transaction: the notifications to send after it commits */
    private readonly pending: Map<NotifyChannel, Set<string>> | null,
  ) {}

  /** A write: atomic on its own, or part of the transaction this store belongs to. */
  private async run<T>(fn: (s: Statements, now: number) => T, wakeups?: [NotifyChannel, ...string[]] | ((result: T) => [NotifyChannel, ...string[]])): Promise<T> {
    const { db, statements } = this.shared;
    const notifyOf = (result: T) => (typeof wakeups === 'function' ? wakeups(result) : wakeups);
    if (this.pending) {
      if (this.finished) throw new Error('this transaction has already finished');
      const result = fn(statements, Date.now());
      const notify = notifyOf(result);
      if (notify) for (const payload of notify.slice(1)) addPending(this.pending, [notify[0], payload]);
      return result;
    }
    const release = await this.shared.lock.acquire();
    let result: T;
    try {
      statements.get('BEGIN IMMEDIATE').run();
      try {
        result = fn(statements, Date.now());
        statements.get('COMMIT').run();
      } catch (error) {
        if (db.inTransaction) statements.get('ROLLBACK').run();
        throw error;
      }
    } finally {
      release();
    }
    const notify = notifyOf(result);
    if (notify) announce(this.shared.wake, [[notify[0], new Set(notify.slice(1))]]);
    return result;
  }

  /** A read: no write lock, but still behind the in-process lock so it never sees an open transaction's rows. */
  private async read<T>(fn: (s: Statements) => T): Promise<T> {
    if (this.pending) {
      if (this.finished) throw new Error('this transaction has already finished');
      return fn(this.shared.statements);
    }
    const release = await this.shared.lock.acquire();
    try {
      return fn(this.shared.statements);
    } finally {
      release();
    }
  }

  async transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    if (this.pending) return fn(this);
    const { db, statements, lock, wake } = this.shared;
    const release = await lock.acquire();
    const tx = new SqliteStore(this.shared, new Map());
    let result: T;
    try {
      statements.get('BEGIN IMMEDIATE').run();
      try {
        result = await fn(tx);
        statements.get('COMMIT').run();
      } catch (error) {
        if (db.inTransaction) statements.get('ROLLBACK').run();
        throw error;
      }
    } finally {
      tx.finished = true;
      release();
    }
    for (const fn of tx.committed) fn();
    if (tx.pending?.size) announce(wake, [...tx.pending]);
    return result;
  }

  onCommit(fn: () => void): void {
    if (this.pending) this.committed.push(fn);
    else fn();
  }

  async listen(channel: NotifyChannel, onWake: (payload: string, version?: number) => void): Promise<() => Promise<void>> {
    const entry = (payload: string) => {
      for (const { stream, version } of parseWakeups(payload)) onWake(stream, version);
    };
    this.shared.wake.on(channel, entry);
    return async () => void this.shared.wake.off(channel, entry);
  }

  async now(): Promise<number> {
    return Date.now();
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
    const shared = this.shared;
    if (--shared.users > 0) return;
    const release = await shared.lock.acquire();
    try {
      if (shared.path !== ':memory:') open.delete(resolve(shared.path));
      if (shared.db.open) shared.db.close();
    } finally {
      release();
    }
  }

  eventAppend(p: Parameters<Store['eventAppend']>[0]) {
    return this.run(
      (s, now) => events.eventAppend(s, now, p),
      (result) => (result.duplicate ? ['events'] : ['events', ...appendWakeups(p, result)]),
    );
  }
  eventReadStream(p: Parameters<Store['eventReadStream']>[0]) {
    return this.read((s) => events.eventReadStream(s, p));
  }
  eventReadAll(p: Parameters<Store['eventReadAll']>[0]) {
    return this.read((s) => events.eventReadAll(s, p));
  }
  eventReadCommitted(p: Parameters<Store['eventReadCommitted']>[0]) {
    return this.read((s) => events.eventReadCommitted(s, p));
  }
  eventHead() {
    return this.read((s) => events.eventHead(s));
  }

  streamList(p: Parameters<Store['streamList']>[0]) {
    return this.read((s) => events.streamList(s, p));
  }
  projectionPut(p: Parameters<Store['projectionPut']>[0]) {
    return this.run((s, now) => events.projectionPut(s, now, p));
  }
  projectionGet(p: Parameters<Store['projectionGet']>[0]) {
    return this.read((s) => events.projectionGet(s, p));
  }
  projectionList(p: Parameters<Store['projectionList']>[0]) {
    return this.read((s) => events.projectionList(s, p));
  }
  projectionListRecent(p: Parameters<Store['projectionListRecent']>[0]) {
    return this.read((s) => events.projectionListRecent(s, p));
  }
  projectionDelete(p: Parameters<Store['projectionDelete']>[0]) {
    return this.run((s) => events.projectionDelete(s, p));
  }
  projectionGetMany(p: Parameters<Store['projectionGetMany']>[0]) {
    return this.read((s) => events.projectionGetMany(s, p));
  }
  projectionPutMany(p: Parameters<Store['projectionPutMany']>[0]) {
    return this.run((s, now) => events.projectionPutMany(s, now, p));
  }

  subscriptionEnsure(p: Parameters<Store['subscriptionEnsure']>[0]) {
    return this.run((s, now) => subscriptions.subscriptionEnsure(s, now, p, events.eventHead(s)));
  }
  subscriptionLease(p: Parameters<Store['subscriptionLease']>[0]) {
    return this.run((s, now) => subscriptions.subscriptionLease(s, now, p));
  }
  subscriptionRelease(p: Parameters<Store['subscriptionRelease']>[0]) {
    return this.run((s) => subscriptions.subscriptionRelease(s, p));
  }
  subscriptionAdvance(p: Parameters<Store['subscriptionAdvance']>[0]) {
    return this.run((s, now) => subscriptions.subscriptionAdvance(s, now, p));
  }
  subscriptionBlock(p: Parameters<Store['subscriptionBlock']>[0]) {
    return this.run((s, now) => subscriptions.subscriptionBlock(s, now, p));
  }
  subscriptionGet(p: Parameters<Store['subscriptionGet']>[0]) {
    return this.read((s) => subscriptions.subscriptionGet(s, p));
  }
  subscriptionList() {
    return this.read((s) => subscriptions.subscriptionList(s));
  }
  parkedAdd(p: Parameters<Store['parkedAdd']>[0]) {
    return this.run((s, now) => subscriptions.parkedAdd(s, now, p));
  }
  parkedList(p: Parameters<Store['parkedList']>[0]) {
    return this.read((s) => subscriptions.parkedList(s, p));
  }
  parkedSetStatus(p: Parameters<Store['parkedSetStatus']>[0]) {
    return this.run((s, now) => subscriptions.parkedSetStatus(s, now, p), ['events', '']);
  }

  taskEnqueue(p: Parameters<Store['taskEnqueue']>[0]) {
    return this.run((s, now) => tasks.taskEnqueue(s, now, p), ['tasks', p.tasks[0]?.queue ?? '']);
  }
  taskClaim(p: Parameters<Store['taskClaim']>[0]) {
    return this.run((s, now) => tasks.taskClaim(s, now, p));
  }
  taskHeartbeat(p: Parameters<Store['taskHeartbeat']>[0]) {
    return this.run((s, now) => tasks.taskHeartbeat(s, now, p));
  }
  taskRenew(p: Parameters<Store['taskRenew']>[0]) {
    return this.run((s, now) => tasks.taskRenew(s, now, p));
  }
  taskComplete(p: Parameters<Store['taskComplete']>[0]) {
    return this.run((s, now) => tasks.taskComplete(s, now, p));
  }
  taskCompleteAll(p: Parameters<Store['taskCompleteAll']>[0]) {
    return this.run((s, now) => tasks.taskCompleteAll(s, now, p));
  }
  taskRelease(p: Parameters<Store['taskRelease']>[0]) {
    return this.run(
      (s, now) => tasks.taskRelease(s, now, p),
      (released) => ['tasks', ...new Set(released.map((t) => t.queue))],
    ).then((released) => released.map((t) => t.id));
  }
  taskFail(p: Parameters<Store['taskFail']>[0]) {
    return this.run((s, now) => tasks.taskFail(s, now, p), ['tasks', '']);
  }
  taskExpire(p: Parameters<Store['taskExpire']>[0]) {
    return this.run((s, now) => tasks.taskExpire(s, now, p), ['tasks', '']);
  }
  taskGet(p: Parameters<Store['taskGet']>[0]) {
    return this.read((s) => tasks.taskGet(s, p));
  }
  taskList(p: Parameters<Store['taskList']>[0]) {
    return this.read((s) => tasks.taskList(s, p));
  }
  taskRedrive(p: Parameters<Store['taskRedrive']>[0]) {
    return this.run((s, now) => tasks.taskRedrive(s, now, p), ['tasks', '']);
  }
  taskReschedule(p: Parameters<Store['taskReschedule']>[0]) {
    return this.run((s) => tasks.taskReschedule(s, p), ['tasks', p.queue]);
  }
  taskNextRunAt(p: Parameters<Store['taskNextRunAt']>[0]) {
    return this.read((s) => tasks.taskNextRunAt(s, p));
  }

  blobPut(p: Parameters<Store['blobPut']>[0]) {
    return this.run((s, now) => blobs.blobPut(s, now, p));
  }
  blobGet(p: Parameters<Store['blobGet']>[0]) {
    return this.read((s) => blobs.blobGet(s, p));
  }
  blobDelete(p: Parameters<Store['blobDelete']>[0]) {
    return this.run((s) => blobs.blobDelete(s, p));
  }
  // a resume makes the held-back tasks claimable: wake the workers
  pauseSet(p: Parameters<Store['pauseSet']>[0]) {
    return this.run((s, now) => pauses.pauseSet(s, now, p));
  }
  pauseDelete(p: Parameters<Store['pauseDelete']>[0]) {
    return this.run((s) => pauses.pauseDelete(s, p), ['tasks', '']);
  }
  pauseList() {
    return this.read((s) => pauses.pauseList(s));
  }
  agentEventPut(p: Parameters<Store['agentEventPut']>[0]) {
    return this.run((s) => agents.agentEventPut(s, p));
  }
  agentEventGet(p: Parameters<Store['agentEventGet']>[0]) {
    return this.read((s) => agents.agentEventGet(s, p));
  }
  agentEventList(p: Parameters<Store['agentEventList']>[0]) {
    return this.read((s) => agents.agentEventList(s, p));
  }
  agentEventUpdate(p: Parameters<Store['agentEventUpdate']>[0]) {
    return this.run((s) => agents.agentEventUpdate(s, p));
  }
  agentRunPut(p: Parameters<Store['agentRunPut']>[0]) {
    return this.run((s) => agents.agentRunPut(s, p));
  }
  agentRunGet(p: Parameters<Store['agentRunGet']>[0]) {
    return this.read((s) => agents.agentRunGet(s, p));
  }
  agentRunUpdate(p: Parameters<Store['agentRunUpdate']>[0]) {
    return this.run((s) => agents.agentRunUpdate(s, p));
  }
  agentRunList(p: Parameters<Store['agentRunList']>[0]) {
    return this.read((s) => agents.agentRunList(s, p));
  }
  agentStepPut(p: Parameters<Store['agentStepPut']>[0]) {
    return this.run((s) => agents.agentStepPut(s, p));
  }
  agentStepUpdate(p: Parameters<Store['agentStepUpdate']>[0]) {
    return this.run((s) => agents.agentStepUpdate(s, p));
  }
  agentStepList(p: Parameters<Store['agentStepList']>[0]) {
    return this.read((s) => agents.agentStepList(s, p));
  }
  agentToolCallPut(p: Parameters<Store['agentToolCallPut']>[0]) {
    return this.run((s) => agents.agentToolCallPut(s, p));
  }
  agentToolCallUpdate(p: Parameters<Store['agentToolCallUpdate']>[0]) {
    return this.run((s) => agents.agentToolCallUpdate(s, p));
  }
  agentToolCallGet(p: Parameters<Store['agentToolCallGet']>[0]) {
    return this.read((s) => agents.agentToolCallGet(s, p));
  }
  agentToolCallList(p: Parameters<Store['agentToolCallList']>[0]) {
    return this.read((s) => agents.agentToolCallList(s, p));
  }
  agentCheckpointPut(p: Parameters<Store['agentCheckpointPut']>[0]) {
    return this.run((s) => agents.agentCheckpointPut(s, p));
  }
  agentCheckpointList(p: Parameters<Store['agentCheckpointList']>[0]) {
    return this.read((s) => agents.agentCheckpointList(s, p));
  }
  agentRunDelete(p: Parameters<Store['agentRunDelete']>[0]) {
    return this.run((s) => agents.agentRunDelete(s, p));
  }
  taskStats() {
    return this.read((s) => maintenance.taskStats(s, Date.now()));
  }
  taskListActiveKeys(p: Parameters<Store['taskListActiveKeys']>[0]) {
    return this.read((s) => maintenance.taskListActiveKeys(s, p));
  }
  taskDelete(p: Parameters<Store['taskDelete']>[0]) {
    return this.run((s) => maintenance.taskDelete(s, p));
  }
  subscriptionStats() {
    return this.read((s) => maintenance.subscriptionStats(s, Date.now()));
  }
  streamDelete(p: Parameters<Store['streamDelete']>[0]) {
    return this.run((s) => maintenance.streamDelete(s, p));
  }
  eventDeleteBefore(p: Parameters<Store['eventDeleteBefore']>[0]) {
    return this.run((s) => maintenance.eventDeleteBefore(s, p));
  }
  storageDiagnose() {
    return this.read((s) => maintenance.storageDiagnose(s));
  }
  async storageVacuum() {
    if (this.pending) throw new Error('storageVacuum cannot run inside a transaction');
    await this.read((s) => maintenance.storageVacuum(s));
  }
  processRegister(p: Parameters<Store['processRegister']>[0]) {
    return this.run((s, now) => processes.processRegister(s, now, p));
  }
  processHeartbeat(p: Parameters<Store['processHeartbeat']>[0]) {
    return this.run((s, now) => processes.processHeartbeat(s, now, p));
  }
  processList() {
    return this.read((s) => processes.processList(s));
  }
  // a subscription's lease ended: its subscribers here look at once
  processExpire(p: Parameters<Store['processExpire']>[0]) {
    return this.run(
      (s, now) => processes.processExpire(s, now, p),
      (ended) => (ended.subscriptions > 0 ? ['events', ''] : ['events']),
    );
  }
}

function addPending(pending: Map<NotifyChannel, Set<string>>, [channel, payload]: [NotifyChannel, string]): void {
  let payloads = pending.get(channel);
  if (!payloads) pending.set(channel, (payloads = new Set()));
  payloads.add(payload);
}
