import { z } from 'zod';
import { iso } from '../../iso.js';
import type { AuditEntry, AuditTrail } from '../../runtime/operate/audit.js';
import { route, type Route } from '../route.js';

const entry = z.object({
  seq: z.int(),
  at: z.string().describe('ISO 8601 UTC: when it was answered'),
  actor: z.string().nullable().describe("the API key's name; null in open mode and when no valid key was given"),
  issued_to: z.string().nullable().describe('the person the key was issued to, if it names one'),
  method: z.string(),
  route: z.string().describe('the OpenAPI path (`/runs/{id}/cancel`); the request path when no route has it'),
  target: z.string().nullable().describe("the route's first path parameter: the id acted on"),
  address: z.string().nullable().describe('the remote address of the connection (behind a proxy: the proxy)'),
  outcome: z.int().describe('the HTTP status it was answered with'),
  detail: z.string().nullable().describe("a refused one's error code and message, quoted values blanked"),
});

const query = z
  .object({
    actor: z.string().min(1).max(200).optional(),
    route: z.string().min(1).max(200).optional().describe('an OpenAPI path, as listed: `/secrets/{name}`'),
    outcome: z.coerce.number().int().min(100).max(599).optional().describe('an HTTP status'),
    since: z.iso
      .datetime({ offset: true })
      .transform((s) => Date.parse(s))
      .optional()
      .describe('ISO 8601: only rows answered at or after it'),
    limit: z.coerce.number().int().min(1).max(500).default(100),
    cursor: z
      .string()
      .regex(/^[1-9][0-9]{0,15}$/, 'must be the next_cursor of a previous page')
      .optional(),
  })
  .strict();

const record = (e: AuditEntry) => ({
  seq: e.seq,
  at: iso(e.at),
  actor: e.actor,
  issued_to: e.issuedTo,
  method: e.method,
  route: e.route,
  target: e.target,
  address: e.address,
  outcome: e.outcome,
  detail: e.detail,
});

/**
 * The audit trail (`GET /audit`): every privileged request the server answered (see `auditRequests`), newest first,
 * by actor, route, outcome and time; `next_cursor` continues after a page (null on the last).
 *
 * @example mount(app, auditRoutes(engine.audit)); // GET /audit?actor=bootstrap&outcome=401
 */
export function auditRoutes(trail: AuditTrail): Route[] {
  return [
    route({
      method: 'get',
      path: '/audit',
      tag: 'audit',
      summary:
        'The audit trail: every privileged request (refused ones too) with who, what, when, from where and its outcome, newest first',
      query,
      status: 200,
      response: z.object({ entries: z.array(entry), next_cursor: z.string().nullable() }),
      errors: [400],
      handle: async ({ query: q }) => {
        const rows = await trail.list({
          ...(q.actor === undefined ? {} : { actor: q.actor }),
          ...(q.route === undefined ? {} : { route: q.route }),
          ...(q.outcome === undefined ? {} : { outcome: q.outcome }),
          ...(q.since === undefined ? {} : { since: q.since }),
          ...(q.cursor === undefined ? {} : { before: Number(q.cursor) }),
          limit: q.limit + 1,
        });
        const entries = rows.slice(0, q.limit);
        const more = rows.length > q.limit;
        return { entries: entries.map(record), next_cursor: more ? String(entries.at(-1)!.seq) : null };
      },
    }),
  ];
}
