import { z } from 'zod';
import type { Engine } from '../../engine.js';
import type { Definitions } from '../../workflows/definitions.js';
import { RUN_STATUSES } from '../../runtime/read/view.js';
import { whoActs } from '../identity.js';
import type { Actor } from '../auth/actor.js';
import { route, type Route } from '../route.js';
import { runSummary } from '../records/runs.js';

const time = z.iso.datetime({ offset: true }).transform((s) => Date.parse(s));
const actor = {
  by: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('who acts (journaled), in open mode only: with an API key, the key is journaled (this is ignored)'),
  reason: z.string().min(1).max(2000).describe('why (journaled)'),
};

const pauseBody = z
  .object({ kind: z.enum(['workflow', 'queue']), name: z.string().min(1).max(200), ...actor })
  .strict();
const storedPauseBody = z.object(actor).strict();
const runFilterBody = z
  .object({
    status: z.array(z.enum(RUN_STATUSES)).min(1).optional(),
    workflow: z.string().min(1).max(200).optional(),
    created_after: time.optional(),
    created_before: time.optional(),
    dry_run: z.boolean().default(false).describe('list what would be acted on, change nothing'),
    ...actor,
  })
  .strict();
const taskFilterBody = z
  .object({
    queue: z.string().min(1).max(128).optional(),
    dead_after: time.optional(),
    dead_before: time.optional(),
    dry_run: z.boolean().default(false),
    ...actor,
  })
  .strict();

const runFilter = (b: z.infer<typeof runFilterBody>) => ({
  ...(b.status ? { status: b.status } : {}),
  ...(b.workflow !== undefined ? { workflow: b.workflow } : {}),
  ...(b.created_after !== undefined ? { createdAfter: b.created_after } : {}),
  ...(b.created_before !== undefined ? { createdBefore: b.created_before } : {}),
});

const bulkResponse = z.object({
  action: z.string(),
  ids: z.array(z.string()),
  skipped: z.array(z.object({ id: z.string(), why: z.string() })),
  dry_run: z.boolean(),
  started: z
    .record(z.string(), z.string())
    .optional()
    .describe('retry: each run id → the id of the run started for it (an agent run: the run its redriven event got)'),
});

/**
 * The operator's face: pause and resume a workflow or a queue, cancel / retry runs and redrive dead
 * tasks by filter (each journaled on the `operator` stream with who and why), the journal of those
 * actions, and the runs that still need a patch. A stored workflow is paused by its id (`/workflows/{id}/pause`): its
 * executions' passes carry that id as their pause key, so the pause holds them alone (a pause of `runledger.stored`,
 * the code workflow they all run as, holds every stored workflow's).
 *
 * @example mount(new Hono(), operatorRoutes(engine, workflows.definitions));
 */
export function operatorRoutes(engine: Engine, definitions?: Definitions): Route[] {
  const op = engine.operator;
  // with an API key, its name; in open mode the body's `by` (a missing one: the operator's 400 naming `by`)
  const as = (actor: Actor | undefined, body: { by?: string | undefined; reason: string }) => ({
    by: whoActs(actor, body.by) ?? '',
    reason: body.reason,
  });
  const stored = async (
    action: 'pause' | 'resume',
    idOrName: string,
    body: z.infer<typeof storedPauseBody>,
    actor: Actor | undefined,
  ) => {
    const id = await definitions!.resolve(idOrName);
    if (action === 'pause') await definitions!.get(id); // a workflow that is not (any more): 404
    const who = as(actor, body);
    const done = action === 'pause' ? await op.pause('workflow', id, who) : await op.resume('workflow', id, who);
    return { workflow_id: id, ...done };
  };
  const bulk = (r: {
    action: string;
    ids: string[];
    skipped: Array<{ id: string; why: string }>;
    dryRun: boolean;
    started?: Record<string, string>;
  }) => ({
    action: r.action,
    ids: r.ids,
    skipped: r.skipped,
    dry_run: r.dryRun,
    ...(r.started ? { started: r.started } : {}),
  });
  const storedPauses: Route[] = [
    route({
      method: 'post',
      path: '/workflows/{id}/pause',
      tag: 'workflows',
      summary:
        'Pause a stored workflow (id or name): its new executions wait queued, running ones start no new step; other workflows run on',
      body: storedPauseBody,
      status: 200,
      errors: [400, 404],
      handle: async ({ params, body, actor }) => stored('pause', params.id!, body, actor),
    }),
    route({
      method: 'post',
      path: '/workflows/{id}/resume',
      tag: 'workflows',
      summary: 'Resume a paused stored workflow (id or name): what its pause held back runs',
      body: storedPauseBody,
      status: 200,
      errors: [400, 404],
      handle: async ({ params, body, actor }) => stored('resume', params.id!, body, actor),
    }),
  ];
  return [
    route({
      method: 'post',
      path: '/operator/pause',
      tag: 'operator',
      summary:
        'Pause a workflow (its runs start no new step; running steps finish) or a queue (none of its tasks is claimed)',
      body: pauseBody,
      status: 200,
      errors: [400],
      handle: async ({ body, actor }) => op.pause(body.kind, body.name, as(actor, body)),
    }),
    route({
      method: 'post',
      path: '/operator/resume',
      tag: 'operator',
      summary: 'Resume a paused workflow or queue: what it held back runs',
      body: pauseBody,
      status: 200,
      errors: [400],
      handle: async ({ body, actor }) => op.resume(body.kind, body.name, as(actor, body)),
    }),
    route({
      method: 'get',
      path: '/operator/pauses',
      tag: 'operator',
      summary: 'What is paused, by whom and why',
      status: 200,
      handle: async () => {
        const pauses = await op.pauses();
        // a workflow pause named by a stored workflow's id holds that stored workflow's executions: named here
        const workflows = pauses.filter((p) => p.kind === 'workflow').map((p) => p.name);
        const names = definitions ? await definitions.names(workflows) : new Map<string, string>();
        return {
          pauses: pauses.map((p) => ({
            kind: p.kind,
            name: p.name,
            ...(p.kind === 'workflow' && names.has(p.name) ? { stored_workflow: names.get(p.name)! } : {}),
            paused_by: p.pausedBy,
            reason: p.reason,
            paused_at: new Date(p.createdAt).toISOString(),
          })),
        };
      },
    }),
    ...(definitions ? storedPauses : []),
    route({
      method: 'post',
      path: '/operator/runs/cancel',
      tag: 'operator',
      summary: 'Cancel every run that matches the filter and has not ended (at most 10,000)',
      body: runFilterBody,
      status: 200,
      response: bulkResponse,
      errors: [400],
      handle: async ({ body, actor }) =>
        bulk(await op.cancelRuns(runFilter(body), as(actor, body), { dryRun: body.dry_run })),
    }),
    route({
      method: 'post',
      path: '/operator/runs/retry',
      tag: 'operator',
      summary:
        'Start again every failed or cancelled run that matches: a new run of the same version and input each; a failed agent run: its event redriven (POST /agent/events/{id}/redrive)',
      body: runFilterBody,
      status: 200,
      response: bulkResponse,
      errors: [400],
      handle: async ({ body, actor }) =>
        bulk(await op.retryRuns(runFilter(body), as(actor, body), { dryRun: body.dry_run })),
    }),
    route({
      method: 'post',
      path: '/operator/tasks/redrive',
      tag: 'operator',
      summary: 'Redrive every dead task that matches (a dead pass of a run: the run goes on)',
      body: taskFilterBody,
      status: 200,
      response: bulkResponse,
      errors: [400],
      handle: async ({ body, actor }) => {
        const filter = {
          ...(body.queue ? { queue: body.queue } : {}),
          ...(body.dead_after !== undefined ? { updatedAfter: body.dead_after } : {}),
          ...(body.dead_before !== undefined ? { updatedBefore: body.dead_before } : {}),
        };
        return bulk(await op.redriveTasks(filter, as(actor, body), { dryRun: body.dry_run }));
      },
    }),
    route({
      method: 'get',
      path: '/operator/actions',
      tag: 'operator',
      summary: 'The operator actions journaled, newest first',
      query: z.object({ limit: z.coerce.number().int().min(1).max(1000).default(100) }).strict(),
      status: 200,
      handle: async ({ query }) => ({
        actions: (await op.actions(query.limit)).map((e) => ({
          version: e.version,
          timestamp: new Date(e.timestamp).toISOString(),
          ...(e.data as object),
        })),
      }),
    }),
    route({
      method: 'get',
      path: '/operator/patches/{id}/runs',
      tag: 'operator',
      summary: 'Runs that may still take the old branch of ctx.patched(id): empty means deprecatePatch is safe',
      query: z.object({ workflow: z.string().min(1).max(200).optional() }).strict(),
      status: 200,
      errors: [400],
      handle: async ({ params, query }) => ({
        runs: (await engine.runs.needingPatch(params.id!, query.workflow ? { workflow: query.workflow } : {})).map(
          (v) => runSummary(v),
        ),
      }),
    }),
  ];
}
