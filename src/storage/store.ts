import type {
  AgentCheckpointRow,
  AgentEventChange,
  AgentEventListParams,
  AgentEventRow,
  AgentRunChange,
  AgentRunListParams,
  AgentRunRow,
  AgentStepChange,
  AgentStepRow,
  AgentToolCallChange,
  AgentToolCallRow,
  ApprovalStatus,
} from './ledger.js';
import type { QueueStats, StoreDiagnosis, SubscriptionStats, TaskDeleteParams } from './maintenance.js';
import type { ProcessesEnded, ProcessInfo, ProcessRegistration } from './processes.js';
import type { ProjectionListParams, ProjectionRecentParams, ProjectionRow } from './projections.js';
import type { CompletedTask, CompletionItem, Lease, NewTask, Task, TaskState } from './tasks.js';

export type { QueueStats, StoreDiagnosis, SubscriptionStats, TaskDeleteParams } from './maintenance.js';
export type { CompletedTask, CompletionItem, Lease, NewTask, Task, TaskClaim, TaskState } from './tasks.js';

export interface StreamInfo {
  streamId: string;
  /** The version of its last event: how many events it holds. */
  version: number;
  /** When its last event was appended (ms, database clock). */
  updatedAt: number;
}

/**
 * The one storage interface. Two implementations (`sqlite/`, `postgres/`) with their own SQL pass
 * the same conformance suite (`conformance.ts`). Methods are named table + verb and take one
 * params object. Every method of a `Store` handed to a `transaction` callback runs in that
 * transaction; calling `transaction` on it again joins the same transaction.
 */
export interface Store {
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
  /** A short health summary for `runledger status`. */
  status(): Promise<StoreStatus>;
  close(): Promise<void>;

  /** Appends events to one or more streams. Versions are 1, 2, 3 … per stream, without gaps. */
  eventAppend(p: EventAppendParams): Promise<AppendResult>;
  eventReadStream(p: {
    streamId: string;
    fromVersion?: number;
    limit?: number;
    backwards?: boolean;
  }): Promise<StoredEvent[]>;
  /** Events in global position order: for browsing. Subscribers use `eventReadCommitted`. */
  eventReadAll(p: {
    fromPosition?: number;
    limit?: number;
    streamPrefix?: string;
    types?: string[];
  }): Promise<StoredEvent[]>;
  /**
   * Events after `after`, in an order in which no event can still appear before one already
   * returned: a reader that resumes from the returned cursor never skips an event, even one whose
   * transaction commits after an event with a later position. The cursor moves past every event
   * the read covered, matching the filters or not, so a reader whose filters match nothing does
   * not read the same events again; a read examines a bounded number of events (through the type
   * index when `types` is given), and `more` says to read again at once.
   */
  eventReadCommitted(p: {
    after: Cursor;
    limit: number;
    streamPrefix?: string;
    types?: string[];
  }): Promise<CommittedRead>;
  /** The cursor after the newest committed event. */
  eventHead(): Promise<Cursor>;
  /** Streams whose id starts with `prefix`, in id order (bytewise), after `after` (exclusive). */
  streamList(p: { prefix: string; after?: string; limit: number }): Promise<StreamInfo[]>;

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

  /** Creates the subscription if it does not exist; returns it as stored. */
  subscriptionEnsure(p: {
    name: string;
    streamPrefix: string | null;
    types: string[] | null;
    ordered: boolean;
    from: 'beginning' | 'end';
  }): Promise<Subscription>;
  /** Takes or renews the subscription's lease for `owner`; null while another owner holds it. */
  subscriptionLease(p: { name: string; owner: string; ttlMs: number }): Promise<Subscription | null>;
  subscriptionRelease(p: { name: string; owner: string }): Promise<void>;
  /** Moves the cursor; throws `LeaseLostError` when `owner` no longer holds the lease. */
  subscriptionAdvance(p: { name: string; owner: string; cursor: Cursor }): Promise<void>;
  /** Sets or clears (null) the reason an `ordered` subscription is blocked. */
  subscriptionBlock(p: { name: string; blockedReason: string | null }): Promise<Subscription>;
  subscriptionGet(p: { name: string }): Promise<Subscription>;
  subscriptionList(): Promise<Subscription[]>;
  parkedAdd(p: { subscription: string; event: StoredEvent; error: string; attempts: number }): Promise<void>;
  parkedList(p: { subscription: string; status?: ParkedStatus }): Promise<ParkedEvent[]>;
  parkedSetStatus(p: {
    subscription: string;
    position: number;
    status: ParkedStatus;
    error?: string;
  }): Promise<ParkedEvent>;

  /**
   * Inserts tasks and journals each one it creates (`enqueuedEvent`, in its stream `taskStream(id)`):
   * one statement on PostgreSQL. A task whose (queue, idempotency key) exists returns the stored
   * one, `created: false`, and writes nothing. A task with a `claim` is claimed as it is inserted
   * (`TaskClaim`), unless paused.
   */
  taskEnqueue(p: { tasks: NewTask[] }): Promise<Array<{ task: Task; created: boolean }>>;
  /**
   * Claims up to `limit` ready tasks of `queue` whose run-at has come, highest priority first,
   * then oldest. A task with an ordering key is claimable only when no task of that key is running
   * and none older is waiting. Each claimed task gets `leaseToken` and a lease of `leaseMs`.
   * With `tags`, a task with a tag is claimed only when `tags` holds it (a task without one
   * always is). Nothing of a paused queue is claimed, nor a task whose tag names a paused workflow.
   */
  taskClaim(p: {
    queue: string;
    limit: number;
    leaseMs: number;
    workerId: string;
    leaseToken: string;
    tags?: string[];
  }): Promise<Task[]>;
  /** Extends the leases still held; returns the ids whose lease was extended. */
  taskHeartbeat(p: { leases: Lease[]; leaseMs: number }): Promise<string[]>;
  /**
   * Checks that every one of `leases` is held (its task running with its token) and keeps them so
   * until the transaction ends, or fails with `LeaseLostError` (some lease is no longer held, or two
   * name one task), which also fails the transaction it is in. It writes nothing: heartbeats extend
   * leases, a write only needs them held. In a transaction, PostgreSQL sends it with the
   * transaction's next statement, so that statement reports the failure: the check of a batch that
   * has one to write costs no round trip of its own.
   */
  taskHold(p: { leases: Lease[] }): Promise<void>;
  /** Completes the tasks whose lease is still held, each with its `task.completed` (`completedEvent`) in its stream; returns those (the others were lost). */
  taskComplete(p: { items: Array<Lease & { result: unknown }> }): Promise<CompletedTask[]>;
  /**
   * Completes every one of `items`' tasks or fails with `LeaseLostError` (a task no longer held
   * with its token, or two items naming one task), as `taskHold` does, and like it travels with
   * the transaction's next statement on PostgreSQL. Journals each completion as `taskComplete`.
   */
  taskCompleteAll(p: { items: CompletionItem[] }): Promise<void>;
  /**
   * Gives back claimed tasks whose attempt never started (a worker's prefetched tasks when it
   * stops or holds them too long): ready again, the claim's attempt not counted. Returns the ids
   * released; a lease no longer held releases nothing.
   */
  taskRelease(p: { leases: Lease[] }): Promise<string[]>;
  /**
   * Fails an attempt: back to ready after `retryDelayMs`, or dead when it is null. Throws `LeaseLostError`.
   * `keepPlace`: the database cut the attempt short, not the task: ready again at its own run-at, ahead of tasks due after it.
   */
  taskFail(p: Lease & { error: string; retryDelayMs: number | null; keepPlace?: boolean }): Promise<Task>;
  /** Ends expired leases: the task is ready again, or dead when its attempts are used up. */
  taskExpire(p: { limit: number }): Promise<Task[]>;
  taskGet(p: { id: string }): Promise<Task>;
  taskList(p: { queue?: string; state?: TaskState; limit: number; afterId?: string }): Promise<Task[]>;
  /** Dead → ready with fresh attempts. Any other state is returned unchanged (`redriven: false`). */
  taskRedrive(p: { id: string }): Promise<{ task: Task; redriven: boolean }>;
  /**
   * Moves the waiting (ready) tasks of an ordering key earlier, to `runAt` at the latest, and
   * returns how many there were: 0 means the caller should enqueue one. Lets a run that sleeps
   * until tomorrow be woken now by a signal, without a second task queuing behind the first.
   * Inside a transaction it serializes with other reschedules of the key until the commit, so two
   * callers never both see 0 and both enqueue.
   */
  taskReschedule(p: { queue: string; orderingKey: string; runAt: number }): Promise<number>;
  /**
   * Milliseconds from now (the database's clock) until the earliest ready task of `queue` that
   * `tags` may claim (see `taskClaim`) and that is not due yet becomes due; null when none. An idle
   * worker sleeps that long (one statement: the clock is read in it). A task due already that a
   * claim did not take waits behind its ordering key: only news makes it claimable (the
   * completion or failure before it, which wakes the workers), so it does not count; counted, it
   * made every idle worker claim again every millisecond while the task before it ran. Except one
   * that became due within the last `lookbackMs` (then at most 0 comes back): the claim that came
   * back short, sent that long ago, may have found it not due yet.
   */
  taskDueIn(p: { queue: string; tags?: string[]; lookbackMs?: number }): Promise<number | null>;

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

  // The agent ledger (`ledger.ts`): projections of the journal, written by its projections.
  agentEventPut(p: { event: AgentEventRow }): Promise<void>;
  /** By id, or by idempotency key. */
  agentEventGet(p: { id?: string; idempotency_key?: string }): Promise<AgentEventRow | undefined>;
  /** The events a run handles, oldest first. */
  agentEventList(p: { run_id: string }): Promise<AgentEventRow[]>;
  /** Inbound events newest first (received time, then id), filtered; `after`: an event id, the previous page's last. */
  agentEventPage(p: AgentEventListParams): Promise<AgentEventRow[]>;
  /**
   * A failed event back to `pending` with a fresh attempt count, handled by run `run_id` from now on;
   * that run's row links to `retry_of`. false (nothing changed): the event is not failed.
   */
  agentEventRedrive(p: { id: string; run_id: string; retry_of: string; at: number }): Promise<boolean>;
  /**
   * Changes every event of the run; `attempt_count` only grows; with `from`, the change's `status`
   * only where an event's status is one of them (a lifecycle edge). Returns how many rows changed.
   */
  agentEventUpdate(p: { run_id: string; change: AgentEventChange; at: number; from?: string[] }): Promise<number>;
  agentRunPut(p: { run: AgentRunRow }): Promise<void>;
  agentRunGet(p: { id: string }): Promise<AgentRunRow | undefined>;
  /** false: no such run (the run is not an agent run), or, with `from`, its status is none of them. */
  agentRunUpdate(p: { id: string; change: AgentRunChange; at: number; from?: string[] }): Promise<boolean>;
  /** Runs by id (newest first, or oldest with `order: 'asc'`), filtered, after the `after` id. */
  agentRunList(p: AgentRunListParams): Promise<AgentRunRow[]>;
  agentStepPut(p: { step: AgentStepRow }): Promise<void>;
  agentStepUpdate(p: {
    run_id: string;
    seq: number;
    attempt: number;
    change: AgentStepChange;
    at: number;
  }): Promise<boolean>;
  /** In the run's order: by seq, then attempt. */
  agentStepList(p: { run_id: string }): Promise<AgentStepRow[]>;
  agentToolCallPut(p: { call: AgentToolCallRow }): Promise<void>;
  /** The call with that key, or the run's call at `seq`; with `approval_status`, only while its approval is in that status. */
  agentToolCallUpdate(
    p: ({ external_idempotency_key: string } | { run_id: string; seq: number }) & {
      change: AgentToolCallChange;
      at: number;
      approval_status?: ApprovalStatus;
    },
  ): Promise<boolean>;
  /** By id, or by external idempotency key. */
  agentToolCallGet(p: { id?: string; external_idempotency_key?: string }): Promise<AgentToolCallRow | undefined>;
  /** A run's calls in the order they were made, or calls by approval status (oldest first). */
  agentToolCallList(p: {
    run_id?: string;
    approval_status?: ApprovalStatus;
    limit: number;
    after?: string;
  }): Promise<AgentToolCallRow[]>;
  agentCheckpointPut(p: { checkpoint: AgentCheckpointRow }): Promise<void>;
  /** In the run's order (seq). */
  agentCheckpointList(p: { run_id: string }): Promise<AgentCheckpointRow[]>;
  /**
   * Deletes runs whole from every ledger table (retention): their steps, tool calls, checkpoints,
   * `agent_runs` rows, and the events they handle that no remaining run starts from. Returns the rows deleted.
   */
  agentRunDelete(p: { ids: string[] }): Promise<{ rows: number }>;
  /** Unfinished work per queue, in one query (metrics scrape it; doctor reads it). */
  taskStats(): Promise<QueueStats[]>;
  /** Of `orderingKeys`, the ones that have a ready or running task in `queue`. */
  taskListActiveKeys(p: { queue: string; orderingKeys: string[] }): Promise<string[]>;
  /** Deletes up to `limit` finished tasks (oldest change first) and returns their ids. Never a ready or running one. */
  taskDelete(p: TaskDeleteParams): Promise<string[]>;
  /** Every subscription's lag and parked count, in one query. */
  subscriptionStats(): Promise<SubscriptionStats[]>;
  /**
   * Deletes whole streams: their events, their version rows and the idempotency keys of their
   * appends. Retention is the one writer that deletes events; readers tolerate the gaps in positions.
   */
  streamDelete(p: { streamIds: string[] }): Promise<{ events: number }>;
  /**
   * Deletes the oldest events of one stream, those with a version below `beforeVersion`, and the
   * idempotency keys of their appends; the stream goes on at its version (nothing is renumbered).
   */
  eventDeleteBefore(p: { streamId: string; beforeVersion: number }): Promise<{ events: number }>;
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
}

/** A process holding leases, as `processList` shows it. */
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

/** An opaque resume point in committed order; `''` is the beginning. */
export type Cursor = string;

export interface EventMetadata {
  correlationId?: string;
  causationId?: string;
  [key: string]: unknown;
}

export interface NewEvent {
  type: string;
  data: unknown;
  metadata?: EventMetadata;
}

export interface StoredEvent {
  position: number;
  streamId: string;
  version: number;
  type: string;
  data: unknown;
  metadata: EventMetadata;
  /** ms since the epoch, database clock */
  timestamp: number;
}

export interface CommittedEvent {
  event: StoredEvent;
  cursor: Cursor;
}

/** What one `eventReadCommitted` covered. */
export interface CommittedRead {
  /** The matching events, at most `limit`, in committed order. */
  events: CommittedEvent[];
  /**
   * Where the next read resumes: the last event returned when `limit` was reached, else the last
   * event examined (matching or not), else `after`. Never before `after`.
   */
  cursor: Cursor;
  /** The read stopped before the newest committed event (the limit or the scan bound): read again now. */
  more: boolean;
}

export interface StreamAppend {
  streamId: string;
  events: NewEvent[];
  /** 0 means "the stream must not exist yet". Omitted: append whatever the version. */
  expectedVersion?: number;
}

export interface EventAppendParams {
  appends: StreamAppend[];
  /** A repeated key returns the events first written with it and writes nothing. */
  idempotencyKey?: string;
  /**
   * Nobody reads the events this append stores: inside a PostgreSQL transaction it then travels in
   * the message of the transaction's next statement or of its `COMMIT` (one round trip fewer) and
   * the result holds no events. Ignored with an idempotency key or an expected version (their
   * outcome must be read) and outside a transaction.
   */
  unread?: boolean;
}

export interface AppendResult {
  events: StoredEvent[];
  duplicate: boolean;
}

export interface Subscription {
  name: string;
  cursor: Cursor;
  streamPrefix: string | null;
  types: string[] | null;
  ordered: boolean;
  blockedReason: string | null;
  owner: string | null;
  leaseExpiresAt: number | null;
  updatedAt: number;
}

export type ParkedStatus = 'parked' | 'retry' | 'skipped' | 'resolved';

export interface ParkedEvent {
  subscription: string;
  position: number;
  event: StoredEvent;
  error: string;
  attempts: number;
  status: ParkedStatus;
  parkedAt: number;
  updatedAt: number;
}

export interface StoreStatus {
  dialect: 'sqlite' | 'postgres';
  location: string;
  schemaVersion: number;
  events: number;
  streams: number;
  tasks: Record<TaskState, number>;
  subscriptions: number;
}
