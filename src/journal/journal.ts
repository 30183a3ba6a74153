import { crashPoint } from '../crash.js';
import { ValidationError } from '../errors.js';
import { checkJson, checkName } from '../json.js';
import type {
  AppendResult,
  CommittedRead,
  Cursor,
  EventAppendParams,
  NewEvent,
  Store,
  StoredEvent,
  StreamAppend,
} from '../storage/store.js';
import type { EngineEvents } from '../observe/events.js';
import { GroupCommit } from './group-commit.js';
import { Wakeup } from './wakeup.js';

/** The shapes the journal's reads answer with, for the floors above (which never import `storage/`). */
export type { CommittedRead, Cursor, StoredEvent } from '../storage/store.js';

/** Updates read tables for one event, in the transaction that appends it. Throwing rolls the append back. */
export type Projection = (event: StoredEvent, tx: Store) => Promise<void>;
/** A projection that takes all the events of its types one append wrote, in order: it can read and write its rows once per append. */
export type BatchProjection = (events: StoredEvent[], tx: Store) => Promise<void>;

export interface AppendOptions {
  /** The stream's version before this append (0: it must not exist yet); a mismatch is a ConflictError. */
  expectedVersion?: number;
  /** A repeated key returns the events first written with it and writes nothing. */
  idempotencyKey?: string;
  /** Append inside the caller's transaction. */
  tx?: Store;
  /** Nobody reads the appended events (see `EventAppendParams.unread`); ignored when a projection reads them. */
  unread?: boolean;
}

/** A watch of commits: its Wakeup is woken by the commits it matched; `stop` ends it (again: nothing). */
export interface Watch {
  wakeup: Wakeup;
  stop(): Promise<void>;
}

/**
 * Sees each commit notice: the stream id and the version it reached ('' and no version: anything may
 * have changed, which always wakes). True wakes the watch; a caller may also act on what it saw.
 */
export type WatchMatch = (streamId: string, version: number | undefined) => boolean;

export interface JournalLimits {
  maxEventBytes: number;
  maxEventsPerAppend: number;
}

/**
 * The append-only event journal. Each event gets a global position and a per-stream version
 * (1, 2, 3 … without gaps); once written it is never changed.
 *
 * @example
 * const journal = new Journal(store, { maxEventBytes: 1 << 20, maxEventsPerAppend: 10_000 });
 * journal.project('order.paid', async (event, tx) => tx.projectionPut({ name: 'paid', key: event.streamId, value: event.data }));
 * await journal.append('order-1', [{ type: 'order.paid', data: { amount: 5 } }], { expectedVersion: 1 });
 */
export class Journal {
  private readonly projections = new Map<string, Projection[]>();
  private readonly batchProjections: Array<{ types: Set<string>; projection: BatchProjection }> = [];
  /** The group commit of this journal's store: run writes and task completions share its transactions. */
  readonly group: GroupCommit;

  constructor(
    private readonly store: Store,
    private readonly limits: JournalLimits,
    /** The engine's events: group commits report their size there (`store:batch`). */
    events: EngineEvents | null = null,
  ) {
    this.group = new GroupCommit(store, this, limits.maxEventsPerAppend, events);
  }

  /** Registers a projection for one or more event types. */
  project(types: string | string[], projection: Projection): void {
    for (const type of Array.isArray(types) ? types : [types]) {
      this.projections.set(type, [...(this.projections.get(type) ?? []), projection]);
    }
  }

  /**
   * Registers a projection that sees each append's events of `types` together (a group commit's
   * append holds many runs' events). It runs before the projections of single events, which so see
   * its rows as of the end of the append.
   */
  projectBatch(types: string[], projection: BatchProjection): void {
    this.batchProjections.push({ types: new Set(types), projection });
  }

  append(streamId: string, events: NewEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    const { expectedVersion, ...rest } = options;
    return this.appendMany([{ streamId, events, ...(expectedVersion === undefined ? {} : { expectedVersion }) }], rest);
  }

  /** Appends to several streams at once: all or nothing. */
  async appendMany(
    appends: StreamAppend[],
    options: Omit<AppendOptions, 'expectedVersion'> = {},
  ): Promise<AppendResult> {
    this.validate(appends);
    const projected = appends.some((a) =>
      a.events.some((e) => this.projections.has(e.type) || this.batchProjections.some((b) => b.types.has(e.type))),
    );
    const params = {
      appends,
      ...(options.idempotencyKey === undefined
        ? {}
        : { idempotencyKey: checkName('idempotencyKey', options.idempotencyKey) }),
      ...(options.unread && !projected ? { unread: true } : {}),
    };
    if (!projected && !options.tx) return this.store.eventAppend(params);
    if (options.tx) return options.tx.transaction((tx) => this.appendIn(tx, params));
    const result = await this.group.transaction((tx) => this.appendIn(tx, params));
    crashPoint('journal:afterCommit');
    return result;
  }

  /** The append and its projections, in `tx`. */
  private async appendIn(tx: Store, params: EventAppendParams): Promise<AppendResult> {
    const appended = await tx.eventAppend(params);
    if (!appended.duplicate) await this.applyProjections(appended.events, tx);
    crashPoint('journal:beforeCommit');
    return appended;
  }

  /** One stream's events in version order (`backwards`: newest first); with `tx`, read inside that transaction. */
  readStream(
    streamId: string,
    options: { fromVersion?: number; limit?: number; backwards?: boolean; tx?: Store } = {},
  ): Promise<StoredEvent[]> {
    const { tx, ...rest } = options;
    return (tx ?? this.store).eventReadStream({ streamId, ...rest });
  }

  /** Events in global position order, for browsing and batch jobs; consumers that must not skip one use `readCommitted`. */
  readAll(
    options: { fromPosition?: number; limit?: number; streamPrefix?: string; types?: string[]; tx?: Store } = {},
  ): Promise<StoredEvent[]> {
    const { tx, ...rest } = options;
    return (tx ?? this.store).eventReadAll(rest);
  }

  /** Events after a cursor, only as far as every earlier transaction has committed (nothing is skipped). */
  readCommitted(p: { after: Cursor; limit: number; streamPrefix?: string; types?: string[] }): Promise<CommittedRead> {
    return this.store.eventReadCommitted(p);
  }

  /** The cursor of the newest committed event: reading from it returns only what comes next. */
  head(): Promise<Cursor> {
    return this.store.eventHead();
  }

  /**
   * Wake-ups for the commits `match` accepts (in process on SQLite, LISTEN/NOTIFY on PostgreSQL).
   * Listening starts before this resolves, so a commit after it is never missed; one that arrives
   * while nobody waits is kept by the Wakeup. This is the one way above the journal to hear of commits.
   *
   * @example const w = await journal.watch((s) => s === 'run:r1'); await w.wakeup.wait(5000); await w.stop();
   */
  async watch(match: WatchMatch): Promise<Watch> {
    const wakeup = new Wakeup();
    const unlisten = await this.store.listen('events', (streamId, version) => {
      if (match(streamId, version) || streamId === '') wakeup.wake();
    });
    let stopped = false;
    return {
      wakeup,
      stop: async () => {
        if (stopped) return;
        stopped = true;
        await unlisten();
      },
    };
  }

  private async applyProjections(events: StoredEvent[], tx: Store): Promise<void> {
    // first: a projection of one event may read what a batch projection keeps (the step statistics read the run view)
    for (const { types, projection } of this.batchProjections) {
      const matching = events.filter((e) => types.has(e.type));
      if (matching.length > 0) await projection(matching, tx);
    }
    for (const event of events) {
      for (const projection of this.projections.get(event.type) ?? []) await projection(event, tx);
    }
  }

  private validate(appends: StreamAppend[]): void {
    let count = 0;
    appends.forEach((append, i) => {
      const at = appends.length === 1 ? '' : `appends[${i}].`;
      checkName(`${at}streamId`, append.streamId);
      // wake-ups carry the stream id with a control character after it
      // biome-ignore lint/suspicious/noControlCharactersInRegex: refuses control characters in stream ids
      if (/[\u0000-\u001f]/.test(append.streamId))
        throw new ValidationError(`${at}streamId`, 'must not contain control characters');
      if (!Array.isArray(append.events) || append.events.length === 0)
        throw new ValidationError(`${at}events`, 'must be a non-empty array');
      const expected = append.expectedVersion;
      if (expected !== undefined && !(Number.isSafeInteger(expected) && expected >= 0)) {
        throw new ValidationError(`${at}expectedVersion`, 'must be a whole number ≥ 0');
      }
      append.events.forEach((event, j) => {
        checkName(`${at}events[${j}].type`, event.type);
        checkJson(`${at}events[${j}].data`, event.data ?? null, this.limits.maxEventBytes);
        if (event.metadata !== undefined)
          checkJson(`${at}events[${j}].metadata`, event.metadata, this.limits.maxEventBytes);
      });
      count += append.events.length;
    });
    if (count > this.limits.maxEventsPerAppend) {
      throw new ValidationError(
        'events',
        `has ${count} events, over the limit of ${this.limits.maxEventsPerAppend} per append`,
      );
    }
  }
}
