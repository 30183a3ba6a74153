import { z } from 'zod';
import { SESSION_WORKFLOW } from '../../agents/session.js';
import { missingVersion } from '../../runtime/versions.js';
import { isTerminal, RUN_STATUSES, type RunView } from '../../runtime/view.js';
import type { StoredEvent } from '../../storage/store.js';
import { STORED_WORKFLOW } from '../../workflows/interpreter.js';

/* A run and its events as the API shows them: the response schemas and the records built from views. */

/** What started a run: a stored workflow's execution, a code workflow, an agent session. */
export const RUN_KINDS = ['execution', 'code', 'session'] as const;
export type RunKind = (typeof RUN_KINDS)[number];

export function runKind(workflow: string): RunKind {
  return workflow === STORED_WORKFLOW ? 'execution' : workflow === SESSION_WORKFLOW ? 'session' : 'code';
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const time = z.iso.datetime().describe('ISO 8601 UTC');

export const eventResponse = z.object({ position: z.int(), version: z.int(), type: z.string(), timestamp: time, data: z.unknown() });

export const runSummaryResponse = z.object({
  id: z.string(),
  workflow: z.string(),
  workflow_id: z.string().nullable().describe("a stored workflow's execution: the workflow's id"),
  agent: z.string().nullable().describe("an agent run's (a session's) agent"),
  kind: z.enum(RUN_KINDS),
  status: z.enum(RUN_STATUSES),
  error: z.string().nullable(),
  created_at: time,
  updated_at: time,
  finished_at: time.nullable(),
  version: z.string().nullable().describe('the code version the run started on (code workflows)'),
  waiting_for_version: z.string().nullable().describe("set while no live worker has the run's version: its next pass waits for one (a deploy)"),
});

export const runResponse = runSummaryResponse.extend({
  input: z.unknown(),
  output: z.unknown(),
  compensations: z.object({ ran: z.int(), failed: z.int() }).nullable(),
  state: z.string().nullable().describe('the business state the run last entered (ctx.setState)'),
  current: z.object({ name: z.string(), label: z.string().nullable() }).nullable().describe('the step running now'),
  generation: z.int().describe("how many times the run continued as new (ctx.continueAsNew); steps are the current generation's"),
  steps: z.array(
    z.object({
      seq: z.union([z.int(), z.string()]).describe("the call's position; `3.word.2`: the second call of branch word of the parallel call 3"),
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
    }),
  ),
});

export type RunSummary = z.infer<typeof runSummaryResponse>;
export type RunRecord = z.infer<typeof runResponse>;
export type EventRecord = z.infer<typeof eventResponse>;

/** An event as the API shows it (a run's events carry no stream id: it is the run's). */
export function eventRecord(event: StoredEvent): EventRecord {
  return { position: event.position, version: event.version, type: event.type, timestamp: iso(event.timestamp)!, data: event.data };
}

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

/** `live`: the tags live workers have (see `liveTags`); without it, nobody is said to wait for a version. */
export function runSummary(view: RunView, live?: Set<string>): RunSummary {
  return {
    id: view.id,
    workflow: view.workflow,
    workflow_id: workflowId(view),
    agent: agentName(view),
    kind: runKind(view.workflow),
    status: view.status,
    error: view.error,
    created_at: iso(view.createdAt)!,
    updated_at: iso(view.updatedAt)!,
    finished_at: isTerminal(view.status) ? iso(view.updatedAt) : null,
    version: view.version ?? null,
    waiting_for_version: live ? missingVersion(view, live) : null,
  };
}

export function runRecord(view: RunView, live?: Set<string>): RunRecord {
  return {
    ...runSummary(view, live),
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
      started_at: iso(s.startedAt)!,
      finished_at: iso(s.finishedAt),
      duration_ms: s.durationMs,
      input: s.input,
      output: s.output,
      error: s.error,
    })),
  };
}
