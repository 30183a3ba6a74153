import { z } from 'zod';
import { ConflictError, NotFoundError, ValidationError, type Problem } from '../errors.js';
import { newId } from '../ids.js';
import { formatBytes } from '../json.js';
import type { Journal } from '../journal/journal.js';
import type { Store, StoredEvent } from '../storage/store.js';
import { zodProblems } from '../problems.js';

/** Every inbound event is the stream `event:<id>`: `event.received` (the envelope), then `event.routed`. */
export const EVENT_STREAM_PREFIX = 'event:';
export const EVENT_RECEIVED = 'event.received';
export const EVENT_ROUTED = 'event.routed';
export const eventStream = (id: string) => `${EVENT_STREAM_PREFIX}${id}`;

/** Largest `detail`, serialized (EventBridge's limit for a whole entry). */
export const MAX_DETAIL_BYTES = 256 * 1024;
/** Most envelopes in one batch (EventBridge takes 10; a batch here is one transaction). */
export const MAX_BATCH = 100;

/** The index `GET /events` pages through: key = the zero-padded journal position, newest last. */
export const EVENT_INDEX = 'trigger-event';
const INDEX = EVENT_INDEX;

/** An event as stored: the envelope, with its id and time filled in. */
export interface Envelope {
  id: string;
  source: string;
  'detail-type': string;
  detail: Record<string, unknown>;
  /** ISO 8601 UTC: the sender's time, or when it was received. */
  time: string;
  resources?: string[];
}

/** One rule that matched an event, and the run it started (or why it could not). */
export interface EventMatch {
  rule_id: string;
  rule_name: string;
  run_id: string | null;
  kind: 'execution' | 'workflow' | 'session' | null;
  error?: string;
}

export interface EventView {
  id: string;
  envelope: Envelope;
  received_at: string;
  /** true once the routing subscription has matched it against the rules (`matches` may be empty). */
  routed: boolean;
  routed_at: string | null;
  matches: EventMatch[];
}

export type EventSummary = Omit<EventView, 'envelope'> & Pick<Envelope, 'source' | 'detail-type' | 'time'>;

const name = z.string().min(1).max(256);

/** One envelope as sent: `id` and `time` are optional, `detail` defaults to `{}`. */
export const envelopeSchema = z
  .object({
    id: z
      .string()
      .min(1)
      .max(128)
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9._:~-]*$/,
        'may hold only letters, digits and . _ : ~ - and must start with a letter or digit',
      )
      .refine((id) => id !== 'stream', "'stream' is reserved (GET /events/stream)")
      .optional(),
    source: name,
    'detail-type': name,
    detail: z.record(z.string(), z.unknown()).default({}),
    time: z.iso.datetime({ offset: true }).optional(),
    resources: z.array(z.string().min(1).max(2048)).max(50).optional(),
  })
  .strict();

export type EnvelopeInput = z.output<typeof envelopeSchema>;

/**
 * A request body: one envelope, or an array of 1 to MAX_BATCH of them. Every problem is reported
 * with its JSON path (`[3].source: required`); an array over the limit is refused before its
 * entries are looked at.
 *
 * @example parseEvents([{ source: 'shop', 'detail-type': 'order.paid', detail: { amount: 5 } }]) // { batch: true, envelopes: [...] }
 */
export function parseEvents(body: unknown): { batch: boolean; envelopes: EnvelopeInput[] } {
  const { problems, ...parsed } = checkEvents(body);
  if (problems.length > 0) throw ValidationError.of(problems);
  return parsed;
}

function checkEvents(body: unknown): { batch: boolean; envelopes: EnvelopeInput[]; problems: Problem[] } {
  const batch = Array.isArray(body);
  const items: unknown[] = batch ? body : [body];
  if (batch && items.length === 0)
    return { batch, envelopes: [], problems: [{ path: '(body)', message: 'is an empty array: send 1 to 100 events' }] };
  if (items.length > MAX_BATCH)
    return {
      batch,
      envelopes: [],
      problems: [{ path: '(body)', message: `has ${items.length} events, over the limit of ${MAX_BATCH} per request` }],
    };
  const problems: Problem[] = [];
  const envelopes: EnvelopeInput[] = [];
  items.forEach((item, i) => {
    const prefix = batch ? `[${i}]` : '';
    const parsed = envelopeSchema.safeParse(item);
    if (!parsed.success) {
      problems.push(
        ...zodProblems(parsed.error).map((p) => ({
          ...p,
          path:
            p.path === '(body)'
              ? prefix || p.path
              : `${prefix}${prefix && !p.path.startsWith('[') ? '.' : ''}${p.path}`,
        })),
      );
      return;
    }
    const bytes = Buffer.byteLength(JSON.stringify(parsed.data.detail));
    if (bytes > MAX_DETAIL_BYTES)
      problems.push({
        path: `${prefix}${prefix ? '.' : ''}detail`,
        message: `is ${formatBytes(bytes)}, over the limit of ${formatBytes(MAX_DETAIL_BYTES)}`,
      });
    envelopes.push(parsed.data);
  });
  return { batch, envelopes, problems };
}

/** The request body of `POST /events` for the HTTP face: validates like `parseEvents`, documents as envelope-or-array. */
export const eventsBody = z
  .unknown()
  .transform((body, ctx) => {
    const { problems, ...parsed } = checkEvents(body);
    // a path of '(body)' is the whole body; the others are JSON paths the HTTP face prints as given
    for (const p of problems)
      ctx.addIssue({ code: 'custom', message: p.message, path: p.path === '(body)' ? [] : [p.path] });
    return problems.length > 0 ? z.NEVER : parsed;
  })
  .meta({
    anyOf: [
      z.toJSONSchema(envelopeSchema, { io: 'input' }),
      { type: 'array', items: z.toJSONSchema(envelopeSchema, { io: 'input' }), minItems: 1, maxItems: MAX_BATCH },
    ],
  });

const registered = new WeakSet<Journal>();

/**
 * Inbound events. `put` stores each envelope as `event.received` in its own stream `event:<id>`
 * in one transaction: storing it is what hands it to the routing subscription, so there is no
 * second write that could fail on its own. A repeated id writes nothing and returns the first.
 *
 * @example
 * const events = new Events(store, engine.journal);
 * const [{ event, created }] = await events.put([{ source: 'shop', 'detail-type': 'order.paid', detail: {} }]);
 */
export class Events {
  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
  ) {
    if (registered.has(journal)) return;
    registered.add(journal);
    journal.project([EVENT_RECEIVED, EVENT_ROUTED], async (event, tx) => {
      if (!event.streamId.startsWith(EVENT_STREAM_PREFIX)) return;
      if (event.type === EVENT_RECEIVED) {
        await tx.projectionPut({ name: INDEX, key: indexKey(event.position), value: summarize(event) });
        return;
      }
      const { received_position } = event.data as { received_position: number };
      const before = (await tx.projectionGet({ name: INDEX, key: indexKey(received_position) })) as
        | EventSummary
        | undefined;
      if (before)
        await tx.projectionPut({
          name: INDEX,
          key: indexKey(received_position),
          value: { ...before, ...routing(event) },
        });
    });
  }

  /**
   * Stores envelopes (ids and times filled in), all or none, in the order given. `created: false`
   * for an id stored before (or earlier in the same batch): nothing is written for it and `event`
   * is the first one as it is now. New ids are appended in one statement, each stream expected not
   * to exist: a concurrent request that stored one of them first makes it conflict, and the batch
   * is read again and retried without it.
   */
  async put(
    envelopes: EnvelopeInput[],
    options: { traceparent?: string } = {},
  ): Promise<Array<{ event: EventView; created: boolean }>> {
    // the sender's trace context: runs its rules start join the sender's trace
    const metadata = options.traceparent ? { metadata: { traceparent: options.traceparent } } : {};
    const now = new Date().toISOString();
    const complete = envelopes.map(
      (e): Envelope => ({
        ...e,
        id: e.id ?? newId('evt'),
        time: e.time === undefined ? now : new Date(e.time).toISOString(),
      }),
    );
    let created: boolean[] = [];
    for (let attempt = 1; ; attempt++) {
      try {
        created = await this.store.transaction(async (tx) => {
          const seen = new Set<string>();
          for (const id of new Set(complete.map((e) => e.id)))
            if ((await this.journal.readStream(eventStream(id), { limit: 1, tx })).length > 0) seen.add(id);
          const fresh = complete.map((e) => !seen.has(e.id) && (seen.add(e.id), true));
          const appends = complete
            .filter((_, i) => fresh[i])
            .map((e) => ({
              streamId: eventStream(e.id),
              events: [{ type: EVENT_RECEIVED, data: e, ...metadata }],
              expectedVersion: 0,
            }));
          if (appends.length > 0) await this.journal.appendMany(appends, { tx });
          return fresh;
        });
        break;
      } catch (error) {
        if (!(error instanceof ConflictError) || attempt >= 5) throw error;
      }
    }
    const views = await Promise.all(complete.map((e) => this.get(e.id)));
    return views.map((event, i) => ({ event, created: created[i]! }));
  }

  /** The envelope, whether it was routed, and the rules it matched with the runs they started. */
  async get(id: string): Promise<EventView> {
    const events = await this.journal.readStream(eventStream(id), { limit: 10 });
    const received = events.find((e) => e.type === EVENT_RECEIVED);
    if (!received) throw new NotFoundError(`event ${id} not found`);
    const envelope = received.data as Envelope;
    return {
      id: envelope.id,
      envelope,
      received_at: new Date(received.timestamp).toISOString(),
      ...routing(events.find((e) => e.type === EVENT_ROUTED)),
    };
  }

  /** Newest first; `last_key` of a page continues after it, null on the last page. */
  async list(
    options: { limit?: number; last_key?: string | null } = {},
  ): Promise<{ events: EventSummary[]; count: number; last_key: string | null }> {
    const limit = options.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw new ValidationError('limit', `must be a whole number from 1 to 100 (got ${options.limit})`);
    const rows = await this.store.projectionList({
      name: INDEX,
      limit: limit + 1,
      backwards: true,
      ...(options.last_key ? { before: options.last_key } : {}),
    });
    const page = rows.slice(0, limit);
    return {
      events: page.map((r) => r.value as EventSummary),
      count: page.length,
      last_key: rows.length > limit ? (page.at(-1)?.key ?? null) : null,
    };
  }
}

/** Zero-padded so keys sort like positions. */
export const indexKey = (position: number) => String(position).padStart(16, '0');

function routing(routed: StoredEvent | null | undefined): Pick<EventView, 'routed' | 'routed_at' | 'matches'> {
  if (!routed) return { routed: false, routed_at: null, matches: [] };
  return {
    routed: true,
    routed_at: new Date(routed.timestamp).toISOString(),
    matches: (routed.data as { matches: EventMatch[] }).matches,
  };
}

function summarize(received: StoredEvent): EventSummary {
  const e = received.data as Envelope;
  return {
    id: e.id,
    source: e.source,
    'detail-type': e['detail-type'],
    time: e.time,
    received_at: new Date(received.timestamp).toISOString(),
    ...routing(null),
  };
}
