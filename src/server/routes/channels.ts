import { z } from 'zod';
import type { Channels } from '../../chat/channels.js';
import { ROLES, CONTENT_TYPES, checkChannelId } from '../../chat/message.js';
import type { Engine } from '../../engine.js';
import { NotFoundError, ValidationError } from '../../errors.js';
import type { ParkedEvent } from '../../runtime/operate/operator.js';
import { route } from '../route.js';

const message = z.object({
  channel_id: z.string(),
  seq: z.int(),
  ts: z.int(),
  event_id: z.string(),
  message_id: z.string(),
  sender_id: z.string(),
  role: z.enum(ROLES),
  content: z.string(),
  content_type: z.enum(CONTENT_TYPES),
  created_at_iso: z.string(),
  metadata: z.record(z.string(), z.unknown()),
});

const postBody = z.object({
  event_id: z.string().optional(),
  sender_id: z.string(),
  role: z.enum(ROLES),
  content: z.string(),
  content_type: z.enum(CONTENT_TYPES).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

const historyQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(500).default(50),
    before: z.coerce.number().int().min(1).optional(),
    after: z.coerce.number().int().min(0).optional(),
  })
  .strict();

const parked = (p: ParkedEvent) => ({
  position: p.position,
  status: p.status,
  attempts: p.attempts,
  error: p.error,
  stream_id: p.event.streamId,
  type: p.event.type,
  data: p.event.data,
  parked_at: new Date(p.parkedAt).toISOString(),
});

/** Chat channels (messages in, history out; live delivery is the WebSocket route) and the subscriptions that consume them. */
export function channelRoutes(engine: Engine, channels: Channels) {
  return [
    route({
      method: 'post',
      path: '/channels/{channel_id}/messages',
      tag: 'channels',
      summary: 'Post a message (201); a repeated event_id returns the original (200) and writes nothing',
      body: postBody,
      status: 201,
      response: message,
      errors: [400, 413],
      handle: async ({ params, body }) => {
        const { message, created } = await channels.post(params.channel_id!, body);
        return new Response(JSON.stringify(message), {
          status: created ? 201 : 200,
          headers: { 'content-type': 'application/json' },
        });
      },
    }),
    route({
      method: 'get',
      path: '/channels/{channel_id}/messages',
      tag: 'channels',
      summary: 'History, chronological: the newest `limit`, or `before`/`after` a seq',
      query: historyQuery,
      status: 200,
      response: z.object({ messages: z.array(message), next_cursor: z.int().nullable() }),
      errors: [400],
      handle: ({ params, query }) => channels.history(params.channel_id!, query),
    }),
    route({
      method: 'get',
      path: '/channels',
      tag: 'channels',
      summary: 'Channels with their last seq and message count',
      query: z
        .object({ limit: z.coerce.number().int().min(1).max(500).default(100), after: z.string().optional() })
        .strict(),
      status: 200,
      errors: [400],
      handle: async ({ query }) => {
        // channel ids are chosen: any well-formed one is a place in the list, so the channel must exist
        if (query.after !== undefined && !(await channels.channel(checkChannelId(query.after, 'after')))) {
          throw new ValidationError(
            'after',
            `'${query.after}' is not the next_cursor of a previous page (the id of a channel)`,
          );
        }
        return channels.list(query);
      },
    }),
    route({
      method: 'get',
      path: '/subscriptions',
      tag: 'subscriptions',
      summary: 'Durable subscriptions with their cursor and parked count',
      status: 200,
      handle: async () => {
        const subs = await engine.operator.subscriptions();
        const rows = await Promise.all(
          subs.map(async (s) => ({
            name: s.name,
            cursor: s.cursor,
            stream_prefix: s.streamPrefix,
            blocked_reason: s.blockedReason,
            parked: (await engine.operator.parked(s.name)).filter((p) => p.status === 'parked').length,
          })),
        );
        return { subscriptions: rows };
      },
    }),
    route({
      method: 'get',
      path: '/subscriptions/{name}/parked',
      tag: 'subscriptions',
      summary: 'Events a subscription gave up on',
      status: 200,
      errors: [404],
      handle: async ({ params }) => {
        await subscription(engine, params.name!);
        return { parked: (await engine.operator.parked(params.name!)).map(parked) };
      },
    }),
    route({
      method: 'post',
      path: '/subscriptions/{name}/parked/{position}/retry',
      tag: 'subscriptions',
      summary: 'Deliver a parked event again',
      status: 202,
      errors: [404],
      handle: async ({ params }) => {
        await subscription(engine, params.name!);
        return parked(await engine.operator.setParked(params.name!, Number(params.position), 'retry'));
      },
    }),
  ];
}

async function subscription(engine: Engine, name: string): Promise<void> {
  const subs = await engine.operator.subscriptions();
  if (!subs.some((s) => s.name === name)) throw new NotFoundError(`subscription ${name} not found`);
}
