/**
 * The journal's table: streams of events, appended to and read in two orders (a stream's versions, the
 * global committed order), and deleted only by retention.
 */
export interface EventStore {
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
   * Deletes whole streams: their events, their version rows and the idempotency keys of their
   * appends. Retention is the one writer that deletes events; readers tolerate the gaps in positions.
   */
  streamDelete(p: { streamIds: string[] }): Promise<{ events: number }>;
  /**
   * Deletes the oldest events of one stream, those with a version below `beforeVersion`, and the
   * idempotency keys of their appends; the stream goes on at its version (nothing is renumbered).
   */
  eventDeleteBefore(p: { streamId: string; beforeVersion: number }): Promise<{ events: number }>;
}

export interface StreamInfo {
  streamId: string;
  /** The version of its last event: how many events it holds. */
  version: number;
  /** When its last event was appended (ms, database clock). */
  updatedAt: number;
}

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
