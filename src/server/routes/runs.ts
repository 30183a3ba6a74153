import { z } from 'zod';
import { toMs } from '../../duration.js';
import type { Engine } from '../../engine.js';
import type { CommittedRead, Cursor, Journal } from '../../journal/journal.js';
import { NotFoundError, ValidationError } from '../../errors.js';
import { runStream } from '../../runtime/pass/history.js';
import { currentStatus, isTerminal, RUN_STATUSES, type RunView } from '../../runtime/read/view.js';
import { jsonWithBlobs } from '../blob-json.js';
import { route, type Route } from '../route.js';
import { sseResponse, type SseFeed, type WatchCommits } from '../sse.js';
import { FALLBACK_MS, PAGE } from '../../runtime/read/runs.js';
import {
  RUN_KINDS,
  type RunFilter,
  runMatches,
  runRecord,
  runResponse,
  runSummary,
  runSummaryResponse,
  runWhere,
  runWorkflow,
  storedNames,
  type WorkflowNames,
  workflowId,
} from '../records/runs.js';
import { type EventRecord, eventRecord, eventResponse } from '../records/events.js';
import { budgetRoutes } from './budget.js';
import { effectRoutes } from './effect.js';

/** A filtered event listing examines at most this many events per request (`next_after` continues). */
const SCAN_EVENTS = 10_000;
const MAX_WAIT_MS = 5 * 60_000;

const list = z
  .string()
  .max(2000)
  .transform((s) =>
    s
      .split(',')
      .map((t) => t.trim())
      .filter((t) => t !== ''),
  );

const eventsQuery = z
  .object({
    after: z.coerce.number().int().min(0).default(0).describe('the version of the last event you have'),
    types: list.optional().describe('comma-separated event types'),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
  })
  .strict();

const runsQuery = z
  .object({
    status: list
      .transform((s) => s.map(currentStatus))
      .pipe(z.array(z.enum(RUN_STATUSES)).min(1))
      .optional()
      .describe('one status or several, comma-separated (the older `succeeded` is still accepted)'),
    workflow: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe("a code workflow's name, a stored workflow's name or id (wf_…), or an agent's name"),
    kind: list
      .pipe(z.array(z.enum(RUN_KINDS)).min(1))
      .optional()
      .describe('execution (of a stored workflow), code, session; comma-separated'),
    created_after: z.iso
      .datetime({ offset: true })
      .transform((s) => Date.parse(s))
      .optional(),
    created_before: z.iso
      .datetime({ offset: true })
      .transform((s) => Date.parse(s))
      .optional(),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    last_key: z.string().min(1).max(200).optional(),
    order: z
      .enum(['created', 'id'])
      .default('created')
      .describe(
        "created (the default, every list's order): newest first by creation time, ties by id descending, every page full; id: the older order by descending id (newest first within a kind only), for old clients",
      ),
  })
  .strict();

const waitQuery = z
  .object({
    timeout: z
      .string()
      .default('30s')
      .transform((value, ctx) => {
        try {
          const ms = /^\d+$/.test(value) ? Number(value) : toMs(value, 'timeout');
          if (ms <= MAX_WAIT_MS) return ms;
          ctx.addIssue({ code: 'custom', message: `must be at most 5m (got '${value}')` });
        } catch (error) {
          ctx.addIssue({
            code: 'custom',
            message: error instanceof ValidationError ? (error.problems[0]?.message ?? error.message) : String(error),
          });
        }
        return z.NEVER;
      })
      .describe("how long to wait: '500ms', '30s', '2m' (at most 5m; a bare number is ms)"),
  })
  .strict();

const runStreamQuery = z
  .object({
    after: z.coerce
      .number()
      .int()
      .min(0)
      .optional()
      .describe('the version of the last event you have (Last-Event-ID wins)'),
  })
  .strict();

const journalStreamQuery = z
  .object({
    stream_prefix: z.string().min(1).max(200).optional(),
    types: list.optional().describe('comma-separated event types'),
    after: z.string().max(100).optional().describe('the id of the last event you have (Last-Event-ID wins)'),
    from: z.enum(['beginning', 'now']).default('now').describe('where to start without after/Last-Event-ID'),
  })
  .strict();

/**
 * The journal over HTTP: a run's events (a page, or live as Server-Sent Events), waiting for a run
 * to end, the list of runs of every kind, and the live journal. `/events/stream` comes first: Hono
 * matches in registration order, so mount these before any `/events/{id}` route.
 *
 * @example mount(new Hono(), runRoutes(engine, { heartbeatMs: 15_000 }));
 */
export function runRoutes(
  engine: Engine,
  options: { heartbeatMs?: number; pollMs?: number; workflows?: WorkflowNames } = {},
): Route[] {
  // an execution's record names its stored workflow; without `workflows` (a test of runs alone) it shows the id
  const workflowNames: WorkflowNames = options.workflows ?? {
    named: async () => undefined,
    names: async () => new Map(),
  };
  const watchCommits: WatchCommits = (match) => engine.journal.watch(match);
  const live = { heartbeatMs: options.heartbeatMs ?? 15_000, pollMs: options.pollMs ?? FALLBACK_MS };
  return [
    route({
      method: 'get',
      path: '/events/stream',
      tag: 'events',
      summary:
        'The journal live, as Server-Sent Events (`id:` the committed cursor; resume with Last-Event-ID; without it, from now)',
      query: journalStreamQuery,
      status: 200,
      errors: [400],
      handle: async ({ query, headers, signal }) => {
        const given = headers.get('last-event-id') ?? query.after;
        const filters = {
          ...(query.stream_prefix ? { streamPrefix: query.stream_prefix } : {}),
          ...(query.types?.length ? { types: query.types } : {}),
        };
        const after =
          given !== undefined
            ? await checkCursor(engine.journal, given, headers.has('last-event-id') ? 'Last-Event-ID' : 'after')
            : query.from === 'now'
              ? await engine.journal.head()
              : '';
        return sseResponse(watchCommits, journalFeed(engine.journal, after, filters), {
          ...live,
          catchUpMs: [10, 50, 250],
          signal,
        });
      },
    }),
    route({
      method: 'get',
      path: '/runs',
      tag: 'runs',
      summary:
        'Runs of every kind, newest first: by creation time descending, ties by id descending (`last_key` of a page continues after it; null on the last)',
      query: runsQuery,
      status: 200,
      response: z.object({ runs: z.array(runSummaryResponse), count: z.int(), last_key: z.string().nullable() }),
      errors: [400],
      handle: async ({ query }) => {
        const filter: RunFilter = {
          status: query.status,
          kind: query.kind,
          workflow: query.workflow === undefined ? undefined : await runWorkflow(workflowNames, query.workflow),
          createdAfter: query.created_after,
          createdBefore: query.created_before,
        };
        const page =
          query.order === 'created'
            ? await engine.runs.listRecent({
                limit: query.limit,
                last_key: query.last_key,
                where: runWhere(filter),
                createdAfter: query.created_after,
                createdBefore: query.created_before,
              })
            : await engine.runs.list({
                limit: query.limit,
                last_key: query.last_key,
                ...(filtered(query) ? { filter: (view) => runMatches(view, filter) } : {}),
              });
        const [live, names] = await Promise.all([engine.runs.liveTags(), storedNames(workflowNames, page.runs)]);
        return { ...page, runs: page.runs.map((view) => runSummary(view, live, names)) };
      },
    }),
    route({
      method: 'get',
      path: '/runs/{id}',
      tag: 'runs',
      summary: 'One run of any kind: its status, input, output, error and steps',
      status: 200,
      response: runResponse,
      errors: [404],
      // big values (blob references in the view) whole, streamed when large
      handle: async ({ params }) => {
        const view = await runView(engine, params.id!);
        const [live, names] = await Promise.all([engine.runs.liveTags(), storedNames(workflowNames, [view])]);
        return jsonWithBlobs(runRecord(view, live, names), engine.runtime.blobs);
      },
    }),
    route({
      method: 'get',
      path: '/runs/{id}/events',
      tag: 'runs',
      summary: "A run's events, oldest first; next_after continues (null: nothing more yet)",
      query: eventsQuery,
      status: 200,
      response: z.object({ events: z.array(eventResponse), next_after: z.int().nullable() }),
      errors: [400, 404],
      handle: async ({ params, query }) => {
        await runView(engine, params.id!);
        return runEvents(engine.journal, params.id!, query);
      },
    }),
    route({
      method: 'get',
      path: '/runs/{id}/events/stream',
      tag: 'runs',
      summary:
        "A run's events as Server-Sent Events (`id:` the version), all then live; closes after the run's last event",
      query: runStreamQuery,
      status: 200,
      errors: [400, 404],
      handle: async ({ params, query, headers, signal }) => {
        await runView(engine, params.id!);
        const header = headers.get('last-event-id');
        if (header !== null && !/^\d{1,15}$/.test(header.trim()))
          throw new ValidationError('Last-Event-ID', `must be the version of a run's event (got '${header}')`);
        const tail = engine.runs.tail(params.id!, header !== null ? Number(header.trim()) : (query.after ?? 0));
        const feed: SseFeed = {
          wakesOn: (streamId) => streamId === runStream(params.id!),
          next: async () => {
            const { events, end } = await tail.next();
            return {
              messages: events.map((e) => ({ id: String(e.version), event: e.type, data: eventRecord(e) })),
              end,
            };
          },
        };
        return sseResponse(watchCommits, feed, { ...live, signal });
      },
    }),
    route({
      method: 'get',
      path: '/runs/{id}/wait',
      tag: 'runs',
      summary: 'Waits for the run to end: 200 with the run, or 408 at the timeout',
      query: waitQuery,
      status: 200,
      response: z.object({ run: runResponse }),
      errors: [400, 404, 408],
      handle: async ({ params, query, signal }) => {
        const view = await engine.runs.wait(params.id!, { timeoutMs: query.timeout, pollMs: live.pollMs, signal });
        if (isTerminal(view.status))
          return jsonWithBlobs(
            { run: runRecord(view, undefined, await storedNames(workflowNames, [view])) },
            engine.runtime.blobs,
          );
        return Response.json({ status: view.status, run_id: view.id }, { status: 408 });
      },
    }),
    route({
      method: 'get',
      path: '/workflows/{id}/executions/{execution_id}/events',
      tag: 'executions',
      summary: "An execution's events, oldest first; next_after continues (null: nothing more yet)",
      query: eventsQuery,
      status: 200,
      response: z.object({ events: z.array(eventResponse), next_after: z.int().nullable() }),
      errors: [400, 404],
      handle: async ({ params, query }) => {
        const view = await engine.runs.find(params.execution_id!);
        if (!view || workflowId(view) !== params.id)
          throw new NotFoundError(`execution ${params.execution_id} of workflow ${params.id} not found`);
        return runEvents(engine.journal, params.execution_id!, query);
      },
    }),
    ...budgetRoutes(engine),
    ...effectRoutes(engine),
  ];
}

/** A run's view; a NotFoundError (404) when there is no such run. */
async function runView(engine: Engine, id: string): Promise<RunView> {
  const view = await engine.runs.find(id);
  if (!view) throw new NotFoundError(`run ${id} not found`);
  return view;
}

/**
 * A page of a run's events after version `after`, of `types` when given. `next_after` is the
 * version to continue after, null once the page reached the stream's current end.
 */
export async function runEvents(
  journal: Journal,
  runId: string,
  q: { after: number; limit: number; types?: string[] | undefined },
): Promise<{ events: EventRecord[]; next_after: number | null }> {
  const wanted = q.types?.length ? new Set(q.types) : null;
  const size = wanted ? 500 : q.limit + 1;
  const events: EventRecord[] = [];
  let examined = q.after;
  for (let scanned = 0; ; ) {
    const batch = await journal.readStream(runStream(runId), { fromVersion: examined + 1, limit: size });
    for (const event of batch) {
      if (!wanted || wanted.has(event.type)) {
        if (events.length === q.limit) return { events, next_after: examined };
        events.push(eventRecord(event));
      }
      examined = event.version;
    }
    scanned += batch.length;
    if (batch.length < size) return { events, next_after: null };
    if (scanned >= SCAN_EVENTS) return { events, next_after: examined };
  }
}

function journalFeed(journal: Journal, after: Cursor, filters: { streamPrefix?: string; types?: string[] }): SseFeed {
  return {
    wakesOn: (streamId) => filters.streamPrefix === undefined || streamId.startsWith(filters.streamPrefix),
    next: async () => {
      // past events the filters skipped too, so an idle feed does not read them again
      let read: CommittedRead;
      do {
        read = await journal.readCommitted({ after, limit: PAGE, ...filters });
        after = read.cursor;
      } while (read.events.length === 0 && read.more);
      const batch = read.events;
      return {
        messages: batch.map(({ event, cursor }) => ({
          id: cursor,
          event: event.type,
          data: { stream_id: event.streamId, ...eventRecord(event) },
        })),
        end: false,
      };
    },
  };
}

/** A resume point given by a client: checked by the store (a read of one event), so a bad one is a 400 now, not a dead stream. */
async function checkCursor(journal: Journal, cursor: string, path: string): Promise<Cursor> {
  const trimmed = cursor.trim();
  const bad = () => new ValidationError(path, `'${cursor}' is not an event id of this journal`);
  if (!/^[0-9:]{0,100}$/.test(trimmed)) throw bad();
  try {
    await journal.readCommitted({ after: trimmed, limit: 1 });
  } catch (error) {
    if (error instanceof ValidationError) throw bad();
    throw error;
  }
  return trimmed;
}

type RunsQuery = z.infer<typeof runsQuery>;

const filtered = (q: RunsQuery) =>
  q.status !== undefined ||
  q.kind !== undefined ||
  q.workflow !== undefined ||
  q.created_after !== undefined ||
  q.created_before !== undefined;
