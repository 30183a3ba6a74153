import type { StoreDiagnosis } from './maintenance.js';
import type { RateLimitRow, RateTakeResult, RateUse } from './rates.js';
import type { ProcessesEnded, ProcessInfo, ProcessRegistration } from './processes.js';
import type { ProjectionListParams, ProjectionRecentParams, ProjectionRow } from './projections.js';
import type { AgentLedgerStore } from './store-agents.js';
import type { AuditStore } from './store-audit.js';
import type { EventStore } from './store-events.js';
import type { SubscriptionStore } from './store-subscriptions.js';
import type { SlotStore } from './store-slots.js';
import type { TaskStore } from './store-tasks.js';
import type { KeyStore } from './store-keys.js';
import type { TaskState } from './tasks.js';

export type { QueueStats, StoreDiagnosis, SubscriptionStats, TaskDeleteParams } from './maintenance.js';
export type { CompletedTask, CompletionItem, Lease, NewTask, Task, TaskClaim, TaskState } from './tasks.js';
export type {
  AppendResult,
  CommittedEvent,
  CommittedRead,
  Cursor,
  EventAppendParams,
  EventMetadata,
  NewEvent,
  StoredEvent,
  StreamAppend,
  StreamInfo,
} from './store-events.js';
export type { ParkedEvent, ParkedStatus, Subscription } from './store-subscriptions.js';
export type { RateLimitRow, RateTakeResult, RateUse } from './rates.js';
export type { SlotWaiter } from './store-slots.js';
export type { AuditEntry, AuditListParams, NewAuditEntry } from './store-audit.js';
export type { ApiKeyChange, ApiKeyRow, NewApiKey } from './store-keys.js';

/**
 * The one storage interface. Two implementations (`sqlite/`, `postgres/`) with their own SQL pass
 * the same conformance suite (`conformance.ts`). Methods are named table + verb and take one
 * params object. Every method of a `Store` handed to a `transaction` callback runs in that
 * transaction; calling `transaction` on it again joins the same transaction. The methods of the
 * larger tables are declared by concern: `EventStore`, `SubscriptionStore`, `TaskStore`, `AgentLedgerStore`.
 */
export interface Store
  extends EventStore,
    SubscriptionStore,
    TaskStore,
    AgentLedgerStore,
    SlotStore,
    AuditStore,
    KeyStore {
  readonly dialect: 'sqlite' | 'postgres';

  /** Runs `fn` in one transaction: everything it writes commits together or not at all. */
  transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T>;
  /** Inside a transaction: runs `fn` once it has committed, never when it rolls back. Outside one: now. */
  onCommit(fn: () => void): void;
  /** Inside a transaction: runs `fn` once it has rolled back, or once its commit failed (it may have taken effect). Outside one: never. */
  onRollback(fn: () => void): void;
  /**
   * Calls `onWake(payload)` after a commit that touched `channel` (any process for PostgreSQL). The
   * payload is the stream appended to (`events`) or the queue (`tasks`); '' means "anything may
   * have changed" (many streams at once, a reconnect): look. For an append, `version` is the
   * stream's version after it when known: a reader that has that much need not read.
   */
  listen(channel: NotifyChannel, onWake: (payload: string, version?: number) => void): Promise<() => Promise<void>>;
  /** The database clock, in ms since the epoch. Leases and run-at times use it, not the process clock. */
  now(): Promise<number>;
  /**
   * The database clock read without a query, where this process keeps it (SQLite: the process's
   * clock, or a test's, see runledger/testing). Absent where a server keeps it (PostgreSQL): StoreClock learns its offset.
   */
  readonly clock?: () => number;
  /** A short health summary for `runledger status`. */
  status(): Promise<StoreStatus>;
  close(): Promise<void>;

  /**
   * Upserts a row. In a transaction on PostgreSQL it is sent with the transaction's next statement
   * or its `COMMIT`, with every other projection row written meanwhile (its failure is theirs).
   */
  projectionPut(p: { name: string; key: string; value: unknown }): Promise<void>;
  projectionGet(p: { name: string; key: string }): Promise<unknown>;
  projectionDelete(p: { name: string; key: string }): Promise<void>;
  /** The rows of `keys` that exist (in no particular order): one statement for many keys. */
  projectionGetMany(p: { name: string; keys: string[] }): Promise<ProjectionRow[]>;
  /** `projectionPut` of many rows in one statement; a key given twice keeps its last value. */
  projectionPutMany(p: { name: string; rows: ProjectionRow[] }): Promise<void>;
  /**
   * Rows of one projection in key order (bytewise), descending when `backwards`; `prefix` keeps
   * keys that start with it, `after`/`before` are exclusive bounds for cursor pagination.
   */
  projectionList(p: ProjectionListParams): Promise<ProjectionRow[]>;
  /**
   * Rows of one projection whose values carry a numeric `createdAt` (ms; rows without one are not
   * listed), newest first (ties: key descending), filtered in the database. Indexed (migration 040) by createdAt and by status then
   * createdAt: a page costs about `limit` index entries however many rows there are, unless a
   * filter other than status keeps few of them.
   */
  projectionListRecent(p: ProjectionRecentParams): Promise<ProjectionRow[]>;

  /**
   * Stores content-addressed chunks (a hash already stored keeps its row) and records `owner` as
   * holding each. A chunk's hash must be the sha256 of its bytes (hex); the caller computes it.
   */
  blobPut(p: { owner: string; chunks: Array<{ hash: string; data: Uint8Array }> }): Promise<void>;
  /** Chunks by hash, in the order asked. A hash not stored → NotFoundError. */
  blobGet(p: { hashes: string[] }): Promise<Buffer[]>;
  /** Drops what `owner` holds and deletes the chunks no other owner holds; returns how many were deleted. */
  blobDelete(p: { owner: string }): Promise<number>;

  /** Pauses a queue or a workflow (see `taskClaim`); false when it was paused already (the first pause is kept). */
  pauseSet(p: { kind: PauseKind; name: string; pausedBy: string; reason: string }): Promise<boolean>;
  /** Resumes it; false when it was not paused. */
  pauseDelete(p: { kind: PauseKind; name: string }): Promise<boolean>;
  pauseList(): Promise<Pause[]>;

  /**
   * Makes the space of deleted rows reusable, never blocking writers for long: after each `batch`
   * of deletions SQLite gives freed pages back to the file system (`incremental_vacuum`); after a
   * whole `sweep` PostgreSQL also runs a plain `VACUUM` of the tables retention deletes from
   * (autovacuum would, but only after its next nap and thresholds, while deletes keep coming).
   */
  storageVacuum(p: { after: 'batch' | 'sweep' }): Promise<void>;
  /** Latency, clock skew, migrations, and the database's commit rate over `sampleMs` (for `runledger doctor`). */
  storageDiagnose(p: { sampleMs: number }): Promise<StoreDiagnosis>;
  /** Records a process that holds leases, its heartbeat now (database clock); registering again renews it. */
  processRegister(p: ProcessRegistration): Promise<void>;
  /** Renews its heartbeat; false when its row is gone (another process ended it): register again. */
  processHeartbeat(p: { id: string }): Promise<boolean>;
  processList(): Promise<ProcessInfo[]>;
  /**
   * Ends the processes named, each only while its heartbeat is still `heartbeatAt` as given (null:
   * whatever it is), so one that beat since it was judged dead stays: deletes their rows and ends
   * the leases they hold (tasks whose worker id, subscriptions whose owner, starts with
   * `<process id>:`), so the usual expiry hands their work on now rather than when each lease runs
   * out. Lease tokens still fence a process that was only paused.
   */
  processExpire(p: { processes: Array<{ id: string; heartbeatAt: number | null }> }): Promise<ProcessesEnded>;

  /** Creates or changes a named rate limit (see rates.ts); its buckets keep their state, the new rate applies at once. */
  rateLimitPut(p: { name: string; limit: number; periodMs: number; key: string | null }): Promise<RateLimitRow>;
  rateLimitGet(p: { name: string }): Promise<RateLimitRow | undefined>;
  rateLimitList(): Promise<RateLimitRow[]>;
  /** Deletes the limit and its buckets; false when there was none. */
  rateLimitDelete(p: { name: string }): Promise<boolean>;
  /**
   * Takes `units` of every bucket named, all or none, on the database clock, exact across processes. With
   * `takeId`, the answer is recorded in the same transaction, and asking again with that id returns it unchanged.
   */
  rateTake(p: { takeId?: string; uses: RateUse[] }): Promise<RateTakeResult>;
  /** Makes `until` the bucket's next free slot at the earliest: every taker of the limit waits (a 429's Retry-After). */
  rateDefer(p: { name: string; key: string; until: number }): Promise<void>;
  /** Charges `units` more to the bucket, whatever its room: what a call really used, known after it. */
  rateCharge(p: RateUse): Promise<void>;
}

/**
 * A paused queue: none of its tasks is claimed. A paused workflow: no task tagged `<workflow>@…`
 * is claimed, so its runs start no new pass (what runs now finishes).
 */
export type PauseKind = 'queue' | 'workflow';

export interface Pause {
  kind: PauseKind;
  name: string;
  pausedBy: string;
  reason: string;
  createdAt: number;
}

export type NotifyChannel = 'events' | 'tasks';

export interface StoreStatus {
  dialect: 'sqlite' | 'postgres';
  location: string;
  schemaVersion: number;
  events: number;
  streams: number;
  tasks: Record<TaskState, number>;
  subscriptions: number;
}
