import { z } from 'zod';
import type { Engine } from '../../engine.js';
import { NotFoundError, ValidationError } from '../../errors.js';
import { RUN_EVENT, isTerminalEvent } from '../../runtime/events.js';
import type { Generation } from '../../runtime/model.js';
import { runStream } from '../../runtime/pass/history.js';
import { FALLBACK_MS } from '../../runtime/read/runs.js';
import { route, type Route } from '../route.js';
import { sseResponse, type SseFeed, type SseMessage } from '../sse.js';

const query = z
  .object({
    after: z.coerce
      .number()
      .int()
      .min(0)
      .optional()
      .describe('the id (event version) of the last message you have (Last-Event-ID wins)'),
  })
  .strict();

/**
 * What a run's model calls (`ctx.generate`) stream, live, as Server-Sent Events: `text` (`{ step, seq, at, text }`:
 * `at` is the text's offset in that call's answer), `resumed` (an attempt took the answer up at `at` after a crash or a
 * failure), `generated` (the call's answer is complete: finish reason and usage), and `end` when the run ends, then
 * the stream closes. Only journaled text is sent, so a reader that resumes with `Last-Event-ID` after a reconnect or a
 * server restart reads every piece once, with no gap, whatever crashed meanwhile.
 *
 * @example curl -N localhost:8080/runs/run_01J…/stream
 */
export function runTextRoutes(engine: Engine, options: { heartbeatMs?: number; pollMs?: number } = {}): Route[] {
  const live = { heartbeatMs: options.heartbeatMs ?? 15_000, pollMs: options.pollMs ?? FALLBACK_MS };
  return [
    route({
      method: 'get',
      path: '/runs/{id}/stream',
      tag: 'runs',
      summary:
        "The text a run's model calls stream, as Server-Sent Events (`text`, `resumed`, `generated`, `end`; `id:` the event version, resume with Last-Event-ID); closes when the run ends",
      query,
      status: 200,
      errors: [400, 404],
      handle: async ({ params, query, headers, signal }) => {
        const id = params.id!;
        if (!(await engine.runs.find(id))) throw new NotFoundError(`run ${id} not found`);
        const header = headers.get('last-event-id');
        if (header !== null && !/^\d{1,15}$/.test(header.trim()))
          throw new ValidationError('Last-Event-ID', `must be the id of a message of this stream (got '${header}')`);
        const tail = engine.runs.tail(id, header !== null ? Number(header.trim()) : (query.after ?? 0));
        const feed: SseFeed = {
          wakesOn: (streamId) => streamId === runStream(id),
          next: async () => {
            // past the events that carry no text, so a long run's backlog is not read one idle wake-up per page
            for (;;) {
              const { events, end } = await tail.next();
              const messages = events.flatMap(textMessage);
              if (messages.length > 0 || events.length === 0 || end) return { messages, end };
            }
          },
        };
        return sseResponse((match) => engine.journal.watch(match), feed, { ...live, signal });
      },
    }),
  ];
}

/** The message an event of the run makes on its text stream, if any. */
export function textMessage(e: { version: number; type: string; data: unknown }): SseMessage[] {
  const data = e.data as { seq: number | string; name: string; at?: number; text?: string; mode?: string };
  const id = String(e.version);
  if (e.type === RUN_EVENT.stepText)
    return [{ id, event: 'text', data: { step: data.name, seq: data.seq, at: data.at, text: data.text } }];
  if (e.type === RUN_EVENT.stepResumed)
    return [{ id, event: 'resumed', data: { step: data.name, seq: data.seq, at: data.at, mode: data.mode } }];
  if (e.type === RUN_EVENT.stepCompleted) {
    const output = (e.data as { output?: Partial<Generation> | null }).output;
    if (typeof output?.text !== 'string' || typeof output.usage?.promptHash !== 'string') return [];
    const { finishReason, usage } = output;
    return [{ id, event: 'generated', data: { step: data.name, seq: data.seq, finishReason, usage } }];
  }
  if (isTerminalEvent(e.type)) return [{ id, event: 'end', data: { type: e.type } }];
  return [];
}
