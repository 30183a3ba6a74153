import { z } from 'zod';
import { callRecord as record } from '../../agents/ledger.js';
import { AGENT_STATUSES, type RemoteLedger } from '../../agents/remote.js';
import { toMs } from '../../duration.js';
import { ValidationError } from '../../errors.js';
import type { Route, RouteRequest } from '../route.js';

const time = z.iso.datetime().describe('ISO 8601 UTC');
const token = z
  .string()
  .min(1)
  .max(200)
  .describe('the lease_token of the invocation (its body carries it next to report_url)');
const duration = z.union([z.string().max(20), z.int().min(0)]).describe('"30s", "500ms", "2m" or ms');
const nodeName = z.string().min(1).max(100);

const node = z.object({ seq: z.int(), name: z.string(), attempt: z.int(), status: z.enum(['started', 'ok', 'error']) });
const toolCall = z.object({
  id: z.string(),
  run_id: z.string(),
  external_idempotency_key: z.string(),
  node: z.string().nullable(),
  tool_name: z.string(),
  risk_level: z.enum(['low', 'medium', 'high']),
  input: z.unknown(),
  output: z.unknown(),
  status: z.enum(['started', 'ok', 'error', 'timeout', 'blocked', 'unknown', 'reconciled']),
  error: z.string().nullable(),
  approval_status: z.enum(['pending', 'approved', 'rejected', 'expired']).nullable(),
  approval_by: z.string().nullable(),
  approval_reason: z.string().nullable(),
  approval_expires_at: time.nullable(),
});
const progress = z.object({ percent: z.number().nullable(), label: z.string().nullable() });

// Bodies are not .strict(): a field this server does not know is ignored, so a client of a later minor still works (docs/protocol.md, versioning).

/** The protocol major these routes speak (docs/protocol.md): every answer says it; a request may name it. */
const PROTOCOL = '1';

/**
 * The ledger routes of an out-of-process agent (docs/protocol.md, "Ledger agents"): it writes nodes,
 * checkpoints, tool calls, lifecycle events and progress to its session while it runs, each write
 * carrying its invocation's lease_token (a superseded one gets 409 lease_lost).
 */
export function agentProtocolRoutes(remote: RemoteLedger): Route[] {
  return [
    speak({
      method: 'post',
      path: '/sessions/{id}/nodes',
      summary: 'Start a node of the session (nodes do not nest): 201 with its seq and attempt',
      body: z.object({ lease_token: token, name: nodeName, input: z.unknown().optional() }),
      status: 201,
      response: node,
      errors: [400, 404, 409],
      handle: ({ params, body }) => remote.nodeStart(params.id!, body),
    }),
    speak({
      method: 'post',
      path: '/sessions/{id}/nodes/{seq}/end',
      summary: 'End an open node with its output (its checkpoint) or an error',
      body: z.object({ lease_token: token, output: z.unknown().optional(), error: z.string().max(10_000).optional() }),
      status: 200,
      response: node,
      errors: [400, 404, 409],
      handle: ({ params, body }) => remote.nodeEnd(params.id!, seqOf(params.seq!), body),
    }),
    speak({
      method: 'post',
      path: '/sessions/{id}/checkpoints',
      summary: 'A checkpoint of state in the open node (or in `node`)',
      body: z.object({ lease_token: token, state: z.unknown(), node: nodeName.optional() }),
      status: 201,
      response: z.object({ node: z.string(), seq: z.int() }),
      errors: [400, 404, 409],
      handle: ({ params, body }) => remote.checkpoint(params.id!, body),
    }),
    speak({
      method: 'post',
      path: '/sessions/{id}/tool-calls',
      summary:
        'A tool call: `started`, or `blocked` while it waits for a person (default for risk high); poll it with GET …?wait=30s',
      body: z.object({
        lease_token: token,
        tool: nodeName,
        risk: z.enum(['low', 'medium', 'high']),
        input: z.unknown().optional(),
        approval: z.boolean().optional(),
        approval_timeout: duration.optional(),
      }),
      status: 201,
      response: toolCall,
      errors: [400, 404, 409],
      handle: async ({ params, body }) => record(await remote.toolCallStart(params.id!, body)),
    }),
    speak({
      method: 'post',
      path: '/sessions/{id}/tool-calls/{call}/result',
      summary:
        "A tool call's result (output) or failure (error; timed_out: true for a timeout); 409 while it waits for approval or once rejected",
      body: z.object({
        lease_token: token,
        output: z.unknown().optional(),
        error: z.string().max(10_000).optional(),
        timed_out: z.boolean().optional(),
      }),
      status: 200,
      response: toolCall,
      errors: [400, 404, 409],
      handle: async ({ params, body }) => record(await remote.toolCallEnd(params.id!, params.call!, body)),
    }),
    speak({
      method: 'get',
      path: '/sessions/{id}/tool-calls/{call}',
      summary:
        'One tool call of the session; `wait` (≤ 60s) long-polls while its approval is pending, woken by the decision',
      query: z.object({ wait: z.string().max(20).optional() }).strict(),
      status: 200,
      response: toolCall,
      errors: [400, 404],
      handle: async ({ params, query, signal }) => {
        const waitMs =
          query.wait === undefined ? 0 : toMs(/^\d+$/.test(query.wait) ? Number(query.wait) : query.wait, 'query.wait');
        if (waitMs > 60_000) throw new ValidationError('query.wait', `must be at most 60s (got ${query.wait})`);
        return record(await remote.toolCall(params.id!, params.call!, waitMs, signal));
      },
    }),
    speak({
      method: 'post',
      path: '/sessions/{id}/lifecycle',
      summary:
        "A lifecycle event of the agent's own (brief 000); AGENT_BACKGROUND_TASK_COMPLETED or …_FAILED is the session's report",
      body: z.object({
        lease_token: token,
        status: z.enum(AGENT_STATUSES),
        error_message: z.string().max(2000).nullable().optional(),
      }),
      status: 200,
      response: z.object({ session_id: z.string(), status: z.string(), duplicate: z.boolean() }),
      errors: [400, 404, 409],
      handle: ({ params, body }) => remote.lifecycle(params.id!, body),
    }),
    speak({
      method: 'post',
      path: '/sessions/{id}/progress',
      summary: "The agent's progress: a percentage and/or a label",
      body: z.object({
        lease_token: token,
        percent: z.number().min(0).max(100).optional(),
        label: z.string().max(200).optional(),
      }),
      status: 200,
      response: progress,
      errors: [400, 404, 409],
      handle: ({ params, body }) => remote.progress(params.id!, body),
    }),
    speak({
      method: 'get',
      path: '/sessions/{id}/progress',
      summary: "The session's newest progress (null: none yet)",
      status: 200,
      response: progress.extend({ at: time }).nullable(),
      errors: [404],
      handle: ({ params }) => remote.lastProgress(params.id!),
    }),
  ];
}

/** A route of the protocol: checks the request's `runledger-protocol` major and names its own on the answer. */
function speak<B, Q>(r: Omit<Route<B, Q>, 'tag'>): Route<B, Q> {
  return {
    ...r,
    tag: 'agent protocol',
    handle: async (request: RouteRequest<B, Q>) => {
      const asked = request.headers.get('runledger-protocol');
      if (asked !== null && asked.trim().split('.')[0] !== PROTOCOL)
        throw new ValidationError(
          'runledger-protocol',
          `this server speaks protocol ${PROTOCOL} (got ${JSON.stringify(asked)})`,
        );
      const result = await r.handle(request);
      return Response.json(result ?? null, { status: r.status, headers: { 'runledger-protocol': PROTOCOL } });
    },
  };
}

function seqOf(text: string): number {
  const seq = Number(text);
  if (!Number.isInteger(seq) || seq < 1)
    throw new ValidationError('seq', `must be a node's seq, an integer ≥ 1 (got ${JSON.stringify(text)})`);
  return seq;
}
