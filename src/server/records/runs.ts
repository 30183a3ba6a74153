import { z } from 'zod';
import { SESSION_WORKFLOW } from '../../agents/session.js';
import { missingVersion } from '../../runtime/start/versions.js';
import { isTerminal, RUN_STATUSES, type RunStatus, type RunView } from '../../runtime/read/view.js';
import type { RecentRunPage } from '../../runtime/read/runs.js';
import { iso } from '../../iso.js';
import { workflowLabel } from '../../observe/events.js';
import type { Definitions } from '../../workflows/definitions.js';
import { STORED_WORKFLOW } from '../../workflows/interpreter.js';
import { budgetRecord, usageOf, usageRecord } from './budget.js';

/* A run and its events as the API shows them: the response schemas and the records built from views. */

/** The stored workflows' names a run record needs (`Definitions` answers them). */
export type WorkflowNames = Pick<Definitions, 'named' | 'names'>;
/** A run listing's filters as the database applies them (`engine.runs.list`'s `where`). */
type RunWhere = NonNullable<RecentRunPage['where']>;

/** What started a run: a stored workflow's execution, a code workflow, an agent session. */
export const RUN_KINDS = ['execution', 'code', 'session'] as const;
export type RunKind = (typeof RUN_KINDS)[number];

export function runKind(workflow: string): RunKind {
  return workflow === STORED_WORKFLOW ? 'execution' : workflow === SESSION_WORKFLOW ? 'session' : 'code';
}

const time = z.iso.datetime().describe('ISO 8601 UTC');

export const runSummaryResponse = z.object({
  id: z.string(),
  workflow: z
    .string()
    .describe(
      "the code workflow's name; an execution: the stored workflow's name (its id once it is deleted); a session: runledger.session",
    ),
  workflow_id: z.string().nullable().describe("a stored workflow's execution: the workflow's id"),
  agent: z.string().nullable().describe("an agent run's (a session's) agent"),
  kind: z.enum(RUN_KINDS),
  status: z.enum(RUN_STATUSES),
  error: z.string().nullable(),
  created_at: time,
  updated_at: time,
  finished_at: time.nullable(),
  version: z.string().nullable().describe('the code version the run started on (code workflows)'),
  waiting_for_version: z
    .string()
    .nullable()
    .describe("set while no live worker has the run's version: its next pass waits for one (a deploy)"),
  waiting_for: z
    .string()
    .nullable()
    .describe("why a waiting run has not begun: 'concurrency user:42 — 1 of 1 in use', a rate limit, a window"),
});

/** A poll step's cancel (brief §8.1), in a run's and an execution's steps. */
export const cancelRecord = z
  .object({
    status: z.enum(['sending', 'sent', 'confirming', 'confirmed', 'unconfirmed', 'failed']),
    polls: z.int().describe("status requests made to confirm it (the poll step's cancel.until)"),
    reason: z.string().nullable().describe('unconfirmed: why (its max wait passed, fail_when held); failed: the error'),
  })
  .describe(
    "a poll's cancel: sending, then sent (no confirmation asked) or confirming → confirmed | unconfirmed, or failed",
  );

export const runResponse = runSummaryResponse.extend({
  input: z.unknown(),
  output: z.unknown(),
  compensations: z.object({ ran: z.int(), failed: z.int() }).nullable(),
  state: z.string().nullable().describe('the business state the run last entered (ctx.setState)'),
  current: z.object({ name: z.string(), label: z.string().nullable() }).nullable().describe('the step running now'),
  generation: z
    .int()
    .describe("how many times the run continued as new (ctx.continueAsNew); steps are the current generation's"),
  steps: z.array(
    z.object({
      seq: z
        .union([z.int(), z.string()])
        .describe("the call's position; `3.word.2`: the second call of branch word of the parallel call 3"),
      name: z.string(),
      status: z.enum(['running', 'retrying', 'success', 'failed', 'timed_out']),
      kind: z.enum(['step', 'poll']),
      label: z.string().nullable(),
      attempts: z.int(),
      started_at: time,
      finished_at: time.nullable(),
      duration_ms: z.number().nullable(),
      input: z.unknown(),
      output: z.unknown(),
      error: z.string().nullable(),
      cancel: cancelRecord.optional(),
      effect: z
        .enum(['intent', 'unknown', 'reconciled', 'repeated'])
        .optional()
        .describe('an effect step: intent journaled; unknown outcome; then reconciled (it happened) or repeated'),
    }),
  ),
  effect_wait: z
    .object({ seq: z.union([z.int(), z.string()]), name: z.string(), attempt: z.int() })
    .optional()
    .describe('the effect step whose unknown outcome a person decides (POST /runs/{id}/effect/decide)'),
  usage: usageRecord.describe('what the run used: its ctx.usage totals and the steps it started'),
  budget: budgetRecord.nullable().describe('its caps (grown by each approval); null: none'),
});

export type RunSummary = z.infer<typeof runSummaryResponse>;
export type RunRecord = z.infer<typeof runResponse>;

export function workflowId(view: RunView): string | null {
  if (view.workflow !== STORED_WORKFLOW) return null;
  const input = view.input as { workflow_id?: unknown } | null;
  return typeof input?.workflow_id === 'string' ? input.workflow_id : null;
}

export function agentName(view: RunView): string | null {
  if (view.workflow !== SESSION_WORKFLOW) return null;
  const input = view.input as { agent?: unknown } | null;
  return typeof input?.agent === 'string' ? input.agent : null;
}

/** The current names of the stored workflows `views` are executions of, for `runSummary` and `runRecord`: one read per workflow. */
export function storedNames(workflows: WorkflowNames, views: Iterable<RunView>): Promise<Map<string, string>> {
  return workflows.names([...views].flatMap((view) => workflowId(view) ?? []));
}

/**
 * `live`: the tags live workers have (see `liveTags`); without it, nobody is said to wait for a version.
 * `names`: stored workflows' names by id (`storedNames`): an execution's `workflow` is its workflow's
 * name, not the interpreter's (`runledger.stored`), or the id when the name is not known.
 */
export function runSummary(view: RunView, live?: Set<string>, names?: ReadonlyMap<string, string>): RunSummary {
  const stored = workflowId(view);
  return {
    id: view.id,
    workflow: stored === null ? workflowLabel(view.workflow, view.input) : (names?.get(stored) ?? stored),
    workflow_id: stored,
    agent: agentName(view),
    kind: runKind(view.workflow),
    status: view.status,
    error: view.error,
    created_at: iso(view.createdAt),
    updated_at: iso(view.updatedAt),
    finished_at: isTerminal(view.status) ? iso(view.updatedAt) : null,
    version: view.version ?? null,
    waiting_for_version: live ? missingVersion(view, live) : null,
    waiting_for: view.waitingFor ?? null,
  };
}

export function runRecord(view: RunView, live?: Set<string>, names?: ReadonlyMap<string, string>): RunRecord {
  return {
    ...runSummary(view, live, names),
    input: view.input,
    output: view.output,
    compensations: view.compensations,
    state: view.state ?? null,
    current: view.current ?? null,
    generation: view.generation ?? 0,
    steps: view.steps.map((s) => ({
      seq: s.seq,
      name: s.name,
      status: s.status,
      kind: s.kind ?? 'step',
      label: s.label ?? null,
      attempts: s.attempts,
      started_at: iso(s.startedAt),
      finished_at: iso(s.finishedAt),
      duration_ms: s.durationMs,
      input: s.input,
      output: s.output,
      error: s.error,
      ...(s.cancel ? { cancel: s.cancel } : {}),
      ...(s.effect ? { effect: s.effect } : {}),
    })),
    ...(view.effectWait ? { effect_wait: view.effectWait } : {}),
    ...usageOf(view),
  };
}

/** A run listing's filters; `workflow` as `runWorkflow` resolved it. */
export interface RunFilter {
  status?: RunStatus[] | undefined;
  kind?: RunKind[] | undefined;
  workflow?: { name: string; ids: string[] } | undefined;
  createdAfter?: number | undefined;
  createdBefore?: number | undefined;
}

/**
 * What `?workflow=` names: a code workflow or an agent by `value`, and the stored workflows whose id
 * it is or whose name it is now (a name is unique among stored workflows: resolved here, once per
 * request, so the listing filters on ids the run views hold).
 */
export async function runWorkflow(workflows: WorkflowNames, value: string): Promise<{ name: string; ids: string[] }> {
  const named = await workflows.named(value);
  return { name: value, ids: named === undefined || named === value ? [value] : [value, named] };
}

/** The filters of `q` as the store applies them (see `runMatches`, the same rules in code). */
export function runWhere(q: RunFilter): RunWhere {
  const where: RunWhere = [];
  if (q.status) where.push([{ field: 'status', in: q.status }]);
  if (q.workflow !== undefined) {
    // a run of workflow N, or an execution of a stored workflow of `ids`, or a session of agent N — as
    // groups that must all hold (the execution and session kinds exclude each other, so this is exact):
    const [n, ids, stored, session] = [q.workflow.name, q.workflow.ids, STORED_WORKFLOW, SESSION_WORKFLOW];
    where.push(
      [{ field: 'workflow', in: [n, stored, session] }],
      [
        { field: 'workflow', in: [n, stored] },
        { field: 'input.agent', in: [n] },
      ],
      [
        { field: 'workflow', in: [n, session] },
        { field: 'input.workflow_id', in: ids },
      ],
      [
        { field: 'workflow', in: [n] },
        { field: 'input.workflow_id', in: ids },
        { field: 'input.agent', in: [n] },
      ],
    );
  }
  if (q.kind) {
    where.push(
      q.kind.map((kind) =>
        kind === 'execution'
          ? { field: 'workflow', in: [STORED_WORKFLOW] }
          : kind === 'session'
            ? { field: 'workflow', in: [SESSION_WORKFLOW] }
            : { field: 'workflow', notIn: [STORED_WORKFLOW, SESSION_WORKFLOW] },
      ),
    );
  }
  return where;
}

export function runMatches(view: RunView, q: RunFilter): boolean {
  if (q.status && !q.status.includes(view.status)) return false;
  if (q.kind && !q.kind.includes(runKind(view.workflow))) return false;
  if (q.workflow !== undefined) {
    const stored = workflowId(view);
    if (
      view.workflow !== q.workflow.name &&
      !(stored !== null && q.workflow.ids.includes(stored)) &&
      agentName(view) !== q.workflow.name
    )
      return false;
  }
  if (q.createdAfter !== undefined && !(view.createdAt > q.createdAfter)) return false;
  if (q.createdBefore !== undefined && !(view.createdAt < q.createdBefore)) return false;
  return true;
}
