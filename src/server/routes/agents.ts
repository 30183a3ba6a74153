import { z } from 'zod';
import type { AgentLedger } from '../../agents/ledger.js';
import { NotFoundError, ValidationError } from '../../errors.js';
import { whoActs } from '../identity.js';
import { route, type Route } from '../route.js';

const time = z.iso.datetime().describe('ISO 8601 UTC');
const id = z.string().min(1).max(200);

const intakeBody = z
  .object({
    conversation_id: id,
    user_id: id,
    source: id.describe('where it came from, e.g. whatsapp_webhook'),
    input_type: id.describe('text, audio, …: recorded as the run’s input_class'),
    payload: z.unknown().refine((v) => v !== undefined, 'is required'),
    idempotency_key: id.optional().describe('the delivery’s id; default: a hash of (source, conversation_id, payload)'),
    agent: z.string().min(1).max(100).optional().describe('default: the configured default agent'),
  })
  .strict();

const intakeResult = z.object({
  event_id: z.string(),
  run_id: z.string(),
  duplicate: z.boolean(),
  decision: z.enum(['queued', 'coalesced']),
});

const eventStatus = z.enum(['pending', 'processing', 'done', 'failed']);

const event = z.object({
  id: z.string(),
  conversation_id: z.string(),
  user_id: z.string(),
  source: z.string(),
  input_type: z.string(),
  payload: z.unknown(),
  idempotency_key: z.string(),
  agent: z.string(),
  run_id: z.string(),
  decision: z.enum(['queued', 'coalesced']),
  status: eventStatus,
  attempt_count: z.int(),
  available_at: time,
  last_error: z.string().nullable(),
  created_at: time,
  updated_at: time,
});

const runStatus = z.enum(['pending', 'running', 'waiting', 'sleeping', 'success', 'failed']);

const run = z.object({
  id: z.string(),
  event_id: z.string().nullable(),
  conversation_id: z.string().nullable(),
  user_id: z.string().nullable(),
  agent: z.string(),
  status: runStatus,
  graph_version: z.string(),
  input_class: z.string(),
  started_at: time.nullable(),
  ended_at: time.nullable(),
  failure_reason: z.string().nullable(),
  retry_of: z.string().nullable().describe('a redriven event’s run: the run of its earlier attempts'),
  created_at: time,
  updated_at: time,
});

const step = z.object({
  id: z.string(),
  run_id: z.string(),
  node: z.string(),
  seq: z.int(),
  attempt: z.int(),
  status: z.enum(['started', 'ok', 'error', 'skipped']),
  input_snapshot: z.unknown(),
  output_snapshot: z.unknown(),
  error: z.string().nullable(),
  latency_ms: z.int().nullable(),
  created_at: time,
  updated_at: time,
});

const approvalStatus = z.enum(['pending', 'approved', 'rejected', 'expired']);

const toolCall = z.object({
  id: z.string(),
  run_id: z.string(),
  external_idempotency_key: z.string(),
  node: z.string().nullable(),
  seq: z.int().nullable(),
  tool_name: z.string(),
  risk_level: z.enum(['low', 'medium', 'high']),
  input: z.unknown(),
  output: z.unknown(),
  status: z.enum(['started', 'ok', 'error', 'timeout', 'blocked', 'unknown', 'reconciled']),
  error: z.string().nullable(),
  attempts: z.int(),
  started_at: time.nullable(),
  ended_at: time.nullable(),
  approval_status: approvalStatus.nullable(),
  approval_by: z.string().nullable(),
  approval_reason: z.string().nullable(),
  approval_expires_at: time.nullable(),
  decided_at: time.nullable(),
  created_at: time,
  updated_at: time,
});

const checkpoint = z.object({
  id: z.string(),
  run_id: z.string(),
  node: z.string(),
  seq: z.int(),
  state: z.unknown(),
  created_at: time,
});

const page = {
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.string().min(1).max(200).optional(),
};
// tool call ids are always generated, so a cursor of another shape is no place in the list
const approvalsPage = {
  ...page,
  cursor: z
    .string()
    .regex(/^tc_[0-9A-HJKMNP-TV-Z]{26}$/, 'must be the next_cursor of a previous page (tc_ and 26 characters)')
    .optional(),
};
const eventsPage = {
  ...page,
  cursor: z
    .string()
    .regex(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/, 'must be the next_cursor of a previous page (evt_ and 26 characters)')
    .optional(),
};
const GENERATED_ID = /^[a-z]+_[0-9A-HJKMNP-TV-Z]{26}$/;
const BY = 'who acts, in open mode only: with an API key, the journal records the key (this is ignored)';
const decisionBody = z
  .object({
    by: z.string().min(1).max(200).optional().describe(BY),
    reason: z.string().max(2000).nullable().optional(),
  })
  .strict();
const redriveBody = z
  .object({
    by: z.string().min(1).max(200).optional().describe(`${BY} (default: api)`),
    reason: z.string().max(2000).nullable().optional(),
  })
  .strict();
const decided = z.object({ tool_call: toolCall, duplicate: z.boolean() });

/** The agent run ledger: intake of inbound events, runs with their steps, tool calls and checkpoints, and approvals. */
export function agentRoutes(ledger: AgentLedger): Route[] {
  // a run's id may be chosen (a session id), so a cursor is a generated id or that of a run that exists
  const checkRunCursor = async (cursor: string | undefined): Promise<void> => {
    if (cursor === undefined || GENERATED_ID.test(cursor)) return;
    try {
      await ledger.run(cursor);
    } catch (error) {
      if (error instanceof NotFoundError)
        throw new ValidationError(
          'cursor',
          `'${cursor}' is not the next_cursor of a previous page (the id of an agent run)`,
        );
      throw error;
    }
  };
  const decide = (decision: 'approved' | 'rejected') =>
    route({
      method: 'post',
      path: `/agent/tool-calls/{id}/${decision === 'approved' ? 'approve' : 'reject'}`,
      tag: 'agents',
      summary: `${decision === 'approved' ? 'Approve' : 'Reject'} a tool call waiting for approval; the same decision again is harmless, a different one 409`,
      body: decisionBody,
      status: 200,
      response: decided,
      errors: [400, 404, 409],
      handle: ({ params, body, actor }) =>
        ledger.decide(params.id!, decision, { ...body, by: whoActs(actor, body.by) ?? '' }),
    });
  return [
    route({
      method: 'post',
      path: '/agent/events',
      tag: 'agents',
      summary:
        'Receive an inbound agent event: 202 with its event and run; the same idempotency_key again is 200 with the same ids and `duplicate: true`',
      body: intakeBody,
      status: 202,
      response: intakeResult,
      errors: [400, 413],
      handle: async ({ body }) => {
        const result = await ledger.intake(body);
        return result.duplicate ? Response.json(result, { status: 200 }) : result;
      },
    }),
    route({
      method: 'get',
      path: '/agent/events',
      tag: 'agents',
      summary: 'Inbound events, newest first (received time, then id), by status, conversation, user and source',
      query: z
        .object({
          status: eventStatus.optional(),
          conversation_id: id.optional(),
          user_id: id.optional(),
          source: id.optional(),
          ...eventsPage,
        })
        .strict(),
      status: 200,
      response: z.object({ events: z.array(event), next_cursor: z.string().nullable() }),
      errors: [400],
      handle: async ({ query }) => {
        const { items, next_cursor } = await ledger.events(query);
        return { events: items, next_cursor };
      },
    }),
    route({
      method: 'get',
      path: '/agent/events/{id}',
      tag: 'agents',
      summary: 'One inbound event: its status, attempts and when it may next be tried',
      status: 200,
      response: event,
      errors: [404],
      handle: ({ params }) => ledger.event(params.id!),
    }),
    route({
      method: 'post',
      path: '/agent/events/redrive',
      tag: 'agents',
      summary: 'Redrive every failed event the filter matches, oldest first: `{ redriven: n }`',
      body: redriveBody.extend({ status: z.literal('failed'), conversation_id: id.optional(), source: id.optional() }),
      status: 200,
      response: z.object({ redriven: z.int() }),
      errors: [400],
      handle: ({ body, actor }) => {
        const { by: given, reason, ...filter } = body;
        const by = whoActs(actor, given);
        return ledger.redriveAll(filter, {
          ...(by !== undefined ? { by } : {}),
          ...(reason !== undefined ? { reason } : {}),
        });
      },
    }),
    route({
      method: 'post',
      path: '/agent/events/{id}/redrive',
      tag: 'agents',
      summary:
        'A failed event again: pending with a fresh attempt count, handled by a new run (its `retry_of` names the old one, whose rows stay), keeping its place in its conversation (ahead of later arrivals not started; next, if one already started or ran); 409 for an event that is not failed',
      body: redriveBody.optional(),
      status: 200,
      response: z.object({ event, run_id: z.string(), retry_of: z.string() }),
      errors: [400, 404, 409],
      handle: ({ params, body, actor }) => {
        const by = whoActs(actor, body?.by);
        return ledger.redrive(params.id!, { ...body, ...(by === undefined ? {} : { by }) });
      },
    }),
    route({
      method: 'get',
      path: '/agent/runs',
      tag: 'agents',
      summary: 'Agent runs, newest first',
      query: z
        .object({ conversation_id: id.optional(), user_id: id.optional(), status: runStatus.optional(), ...page })
        .strict(),
      status: 200,
      response: z.object({ runs: z.array(run), next_cursor: z.string().nullable() }),
      errors: [400],
      handle: async ({ query }) => {
        await checkRunCursor(query.cursor);
        const { items, next_cursor } = await ledger.runs(query);
        return { runs: items, next_cursor };
      },
    }),
    route({
      method: 'get',
      path: '/agent/runs/{id}',
      tag: 'agents',
      summary:
        'One agent run (the same run as GET /sessions/{id}) with its events, steps, tool calls and checkpoints, in order',
      status: 200,
      response: run.extend({
        waiting_for: z
          .string()
          .nullable()
          .describe(
            'why the run is held back (debounced until …, concurrency …, budget: …), as GET /runs/{id} shows it',
          ),
        events: z.array(event),
        steps: z.array(step),
        tool_calls: z.array(toolCall),
        checkpoints: z.array(checkpoint),
      }),
      errors: [404],
      handle: ({ params }) => ledger.run(params.id!),
    }),
    route({
      method: 'get',
      path: '/conversations/{id}/runs',
      tag: 'agents',
      summary:
        "A conversation's agent runs, oldest first (by creation; a redriven event's run runs in its event's place: see started_at)",
      query: z.object(page).strict(),
      status: 200,
      response: z.object({ runs: z.array(run), next_cursor: z.string().nullable() }),
      errors: [400],
      handle: async ({ params, query }) => {
        await checkRunCursor(query.cursor);
        const { items, next_cursor } = await ledger.runs({ ...query, conversation_id: params.id!, order: 'asc' });
        return { runs: items, next_cursor };
      },
    }),
    route({
      method: 'get',
      path: '/agent/approvals',
      tag: 'agents',
      summary: 'Tool calls by approval status (default pending: waiting for a person), oldest first',
      query: z.object({ status: approvalStatus.default('pending'), ...approvalsPage }).strict(),
      status: 200,
      response: z.object({ tool_calls: z.array(toolCall), next_cursor: z.string().nullable() }),
      errors: [400],
      handle: async ({ query }) => {
        const { items, next_cursor } = await ledger.approvals(query);
        return { tool_calls: items, next_cursor };
      },
    }),
    route({
      method: 'get',
      path: '/agent/tool-calls/{id}',
      tag: 'agents',
      summary: 'One tool call',
      status: 200,
      response: toolCall,
      errors: [404],
      handle: ({ params }) => ledger.toolCall(params.id!),
    }),
    decide('approved'),
    decide('rejected'),
  ];
}
