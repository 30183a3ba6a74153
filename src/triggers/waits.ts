import type { Engine } from '../engine.js';
import { ConflictError, NotFoundError } from '../errors.js';
import type { Journal } from '../journal/journal.js';
import { RUN_EVENT } from '../runtime/events.js';
import { fieldOf, matchKey, type EventMatch } from '../runtime/match.js';
import type { Store, StoredEvent } from '../storage/store.js';
import { EVENT_INDEX, EVENT_RECEIVED, eventStream, indexKey, type Envelope, type EventSummary } from './events.js';

/** The subscription that hands business events to the runs waiting for them (`waitForEvent` with `match`, `cancelOn`). */
export const EVENT_WAITS_SUBSCRIPTION = 'triggers.event-waits';
/** What it reads: events received, waits begun with a match, runs started with `cancelOn`. */
export const EVENT_WAITS_TYPES = [
  EVENT_RECEIVED,
  RUN_EVENT.waitStarted,
  RUN_EVENT.waitCompleted,
  RUN_EVENT.waitTimedOut,
  RUN_EVENT.runStarted,
];

/** Key `<type>␟<path>␟<value>` (U+001F: PostgreSQL text holds no NUL; path and value empty: any event of the type) → its runs. */
const INDEX = 'event-wait';
/** Key `<type>` → the paths some wait or cancel of that type matches on: an event is looked up once per path. */
const PATHS = 'event-wait-path';
/** Events a lookback reads at most, newest first. */
const LOOKBACK_ROWS = 10_000;

interface Waiting {
  run: string;
  /** A `cancelOn`: the event cancels the run, rather than being sent to it. */
  cancel?: true;
}

type Started = { seq: number; name: string; match?: EventMatch; lookback?: number };
type RunStarted = { cancelOn?: Array<{ event: string; match: EventMatch | null }> };

/**
 * Correlation of business events with runs, as one ordered subscription of the journal: it indexes each wait
 * with a match (`wait.started`) and each `cancelOn` (`run.started`) by event type, field and value, and looks an
 * event received up in that index — one read per field some run matches on, never a scan of the waiting runs.
 * A match is sent to its run as signal `<type>` (idempotency key `event:<id>`, so a redelivery after a crash sends
 * nothing twice) or cancels it, in the subscription's transaction. Ordered, so an event the journal holds before a
 * wait was looked up before the wait was indexed: the wait's `lookback` finds it, among the events received up to
 * that long before it.
 */
export class EventWaits {
  constructor(
    private readonly engine: Engine,
    private readonly journal: Journal,
  ) {}

  async handle(event: StoredEvent, tx: Store): Promise<void> {
    if (event.type === EVENT_RECEIVED) return this.deliver(event.data as Envelope, tx);
    const run = event.streamId.slice('run:'.length);
    if (event.type === RUN_EVENT.waitStarted) {
      const wait = event.data as Started;
      if (!wait.match) return;
      // the oldest event in the lookback this run was not sent yet: one an earlier wait of the run took is a duplicate
      const early = wait.lookback ? await this.lookback(event, wait.name, wait.match, wait.lookback, tx) : [];
      for (const envelope of early) if (!(await this.send(run, envelope, tx)).duplicate) return;
      return this.add(tx, wait.name, wait.match, { run });
    }
    if (event.type === RUN_EVENT.waitCompleted || event.type === RUN_EVENT.waitTimedOut) {
      const wait = event.data as Started;
      return wait.match ? this.remove(tx, wait.name, wait.match, run) : undefined;
    }
    for (const c of (event.data as RunStarted).cancelOn ?? [])
      await this.add(tx, c.event, c.match, { run, cancel: true });
  }

  private async deliver(envelope: Envelope, tx: Store): Promise<void> {
    const type = envelope['detail-type'];
    const paths = ((await tx.projectionGet({ name: PATHS, key: type })) as { paths: string[] } | undefined)?.paths;
    for (const path of paths ?? []) {
      const value = path === '' ? '' : fieldOf(envelope.detail, path);
      if (value === undefined || value === null) continue;
      const key = keyOf(type, path === '' ? null : { path, value });
      const row = (await tx.projectionGet({ name: INDEX, key })) as { waiting: Waiting[] } | undefined;
      if (!row) continue;
      // a run retention deleted (NotFoundError) or that ended (a cancel's ConflictError) takes nothing: thrown, it would
      // block this ordered subscription, and with it every wait and cancel
      for (const w of row.waiting)
        await (w.cancel
          ? this.engine.cancel(w.run, { reason: `event ${type} ${envelope.id}`, tx })
          : this.send(w.run, envelope, tx)
        ).catch((error) => (gone(error) ? undefined : Promise.reject(error)));
      await tx.projectionDelete({ name: INDEX, key });
    }
  }

  private send(run: string, envelope: Envelope, tx: Store): Promise<{ duplicate: boolean }> {
    return this.engine.signal(run, envelope['detail-type'], envelope, { idempotencyKey: `event:${envelope.id}`, tx });
  }

  private async add(tx: Store, type: string, match: EventMatch | null, waiting: Waiting): Promise<void> {
    const key = keyOf(type, match);
    const row = ((await tx.projectionGet({ name: INDEX, key })) as { waiting: Waiting[] } | undefined) ?? {
      waiting: [],
    };
    if (!row.waiting.some((w) => w.run === waiting.run && !w.cancel === !waiting.cancel)) row.waiting.push(waiting);
    await tx.projectionPut({ name: INDEX, key, value: row });
    const paths =
      ((await tx.projectionGet({ name: PATHS, key: type })) as { paths: string[] } | undefined)?.paths ?? [];
    const path = match?.path ?? '';
    if (!paths.includes(path)) await tx.projectionPut({ name: PATHS, key: type, value: { paths: [...paths, path] } });
  }

  /** A wait that ended (its event came, or its timeout): its run leaves the key's row, and an empty row goes. */
  private async remove(tx: Store, type: string, match: EventMatch, run: string): Promise<void> {
    const key = keyOf(type, match);
    const row = (await tx.projectionGet({ name: INDEX, key })) as { waiting: Waiting[] } | undefined;
    if (!row) return;
    const waiting = row.waiting.filter((w) => w.cancel || w.run !== run);
    if (waiting.length === row.waiting.length) return;
    if (waiting.length === 0) await tx.projectionDelete({ name: INDEX, key });
    else await tx.projectionPut({ name: INDEX, key, value: { waiting } });
  }

  /** The events of `type` matching, oldest first, received at most `ms` before the wait and before it in the journal. */
  private async lookback(wait: StoredEvent, type: string, match: EventMatch, ms: number, tx: Store) {
    const since = new Date(wait.timestamp - ms).toISOString();
    let before = indexKey(wait.position);
    const found: Envelope[] = [];
    for (let read = 0; read < LOOKBACK_ROWS; ) {
      const page = await tx.projectionList({ name: EVENT_INDEX, before, backwards: true, limit: 200 });
      for (const { value } of page) {
        const summary = value as EventSummary;
        if (summary.received_at < since) return found.reverse();
        if (summary['detail-type'] !== type) continue;
        const [received] = await this.journal.readStream(eventStream(summary.id), { limit: 1, tx });
        const envelope = received?.data as Envelope | undefined;
        if (envelope && matchKey(fieldOf(envelope.detail, match.path)) === matchKey(match.value)) found.push(envelope);
      }
      read += page.length;
      if (page.length < 200) break;
      before = page[page.length - 1]!.key;
    }
    return found.reverse();
  }
}

function keyOf(type: string, match: EventMatch | null): string {
  return match ? `${type}\u001f${match.path}\u001f${matchKey(match.value)}` : `${type}\u001f\u001f`;
}

function gone(error: unknown): boolean {
  return error instanceof NotFoundError || error instanceof ConflictError;
}
