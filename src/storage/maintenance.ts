/**
 * Types of the Store's operations methods: statistics for metrics and `runledger doctor`, and the
 * deletions of retention. Beside `store.ts` so that file only grows by the method lines.
 */

/** One queue's unfinished work, read in one query per scrape. */
export interface QueueStats {
  queue: string;
  /** Ready tasks, due now or later. */
  ready: number;
  /** Ready tasks whose run-at has come: the backlog. */
  due: number;
  running: number;
  dead: number;
  /** The run-at of the oldest due task (ms, database clock), or null. */
  oldestDueAt: number | null;
  /** Running tasks whose lease has run out: their worker died or stalled; the next sweep frees them. */
  expiredLeases: number;
}

export interface SubscriptionStats {
  name: string;
  /** Journal positions between the subscription's cursor and the newest event (events it does not want count too). */
  behind: number;
  parked: number;
  blocked: boolean;
  /** An owner whose lease ran out still holds the row: it died without releasing. */
  leaseExpired: boolean;
}

export interface StoreDiagnosis {
  /** One round trip (ms). */
  latencyMs: number;
  /** The database clock minus this machine's (ms), corrected for half the round trip; 0 for SQLite. */
  clockSkewMs: number;
  /** Versions of the migrations applied. */
  migrations: number[];
  /** Commits per second on the database over the sample, this process's own excluded; null when it cannot be told (SQLite). */
  commitsPerSecond: number | null;
  /** Where commitsPerSecond came from. */
  commitsSource: 'pg_stat_statements' | 'pg_stat_database' | null;
  /** SQLite: the file's auto_vacuum mode (2 = incremental); null for PostgreSQL. */
  autoVacuum: number | null;
  /**
   * PostgreSQL: whether the server's autovacuum is on, and the live and dead rows of the tables
   * every step and task updates (tasks, projections, streams); null for SQLite.
   */
  vacuum: { autovacuum: boolean; live: number; dead: number } | null;
}

export type FinishedState = 'completed' | 'dead';

export interface TaskDeleteParams {
  /** Only tasks in these states; running and ready tasks are never deleted. */
  states: FinishedState[];
  /** Only tasks last changed before this (ms, database clock). */
  updatedBefore: number;
  limit: number;
  queue?: string;
  /** Every queue but this one. */
  exceptQueue?: string;
  /** Only tasks with one of these ordering keys. */
  orderingKeys?: string[];
}
