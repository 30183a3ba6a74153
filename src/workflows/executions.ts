import type { Engine } from '../engine.js';
import { crashPoint } from '../crash.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import { checkJson, checkName } from '../json.js';
import { RUN_EVENT } from '../runtime/events.js';
import { joinedBy } from '../runtime/start/batch.js';
import { keyStream } from '../runtime/start/keyed.js';
import { isTerminal, type RunView } from '../runtime/read/view.js';
import type { Workflow } from '../runtime/workflow.js';
import type { Store, StoredEvent } from '../storage/store.js';
import type { Definitions, StoredWorkflow } from './definitions.js';
import { STORED_WORKFLOW, type ExecutionInput, type Reused } from './interpreter.js';
import type { cancelReasons } from './cancel-reason.js';
import { fallbackFor } from './fallback.js';
import { executionInput } from './execution-input.js';
import { executionStart } from './execution-start.js';
import { projectStepStats, readStepStats } from './progress.js';
import {
  record,
  STATUS,
  type ExecutionLink,
  type ExecutionRecord,
  type ExecutionStatus,
  type ExecutionSummary,
} from './record.js';
import { reuseForRerun, reuseForRetry } from './rerun.js';
import { rerunTimeouts } from './timeouts.js';

/** What starting an execution answers: a repeated Idempotency-Key, the first execution as it is now (`duplicate`). */
export interface Executed {
  execution_id: string;
  workflow_id: string;
  workflow_version: number;
  status: ExecutionStatus;
  duplicate: boolean;
}

export type {
  ExecutionLink,
  ExecutionRecord,
  ExecutionStatus,
  ExecutionSummary,
  StepRecord,
  StepStatus,
} from './record.js';

/** The projection that lists a workflow's executions, keyed `<workflow id>:<execution id>` (ids sort by time). */
export const INDEX = 'execution';
/** The projection `Definitions` keeps each workflow's current version in (read here through a caller's transaction). */
export const WORKFLOW_VIEW = 'workflow';
/** An execution's key: the stream `execution-key:<workflow>:<key>`, whose `execution.keyed` event names it. */
const keyed = (workflowId: string, key: string) => ({
  scope: `execution-key:${workflowId}`,
  key,
  runOf: (e: StoredEvent) => (e.data as { execution_id: string }).execution_id,
});
const named = (id: string) => ({ runId: id, event: { type: 'execution.keyed', data: { execution_id: id } } });
const LINKS = 'execution-reruns';
const linkStream = (executionId: string) => `execution-links:${executionId}`;

/**
 * Executions of stored workflows. An execution is a run of the interpreter whose id is the
 * `execution_id`; its record is read from the run's view, which the journal keeps current.
 *
 * @example
 * const { execution_id } = await executions.execute('wf_01J…', { trigger_data: { name: 'Ada' } });
 */
export class Executions {
  constructor(
    private readonly engine: Engine,
    /** The engine's store (the app passes it: `Engine` no longer shows it): the executions index, links and stats. */
    private readonly store: Store,
    private readonly definitions: Definitions,
    private readonly interpreter: Workflow<ExecutionInput>,
    /** The cancel requests, read back (`cancelReasons`, made once per engine: it registers a projection). */
    private readonly reasons: ReturnType<typeof cancelReasons>,
  ) {
    projectStepStats(engine.journal);
    engine.journal.project('execution.rerun', async (event, tx) => {
      const key = event.streamId.slice('execution-links:'.length);
      const links = ((await tx.projectionGet({ name: LINKS, key })) as ExecutionLink[] | undefined) ?? [];
      await tx.projectionPut({ name: LINKS, key, value: [...links, event.data as ExecutionLink] });
    });
    // an `on_failure` rerun starts in the transaction that journals the failure: both commit, or neither
    engine.journal.project(RUN_EVENT.runFailed, async (event, tx) => {
      const next = await fallbackFor(tx, event, engine.config.maxPayloadBytes);
      if (!next) return;
      await this.continueFrom(next.link.execution_id, next.input, next.reuse, next.link, tx);
      crashPoint('execution:fallback');
      tx.onCommit(() => crashPoint('execution:afterFallback'));
    });
  }

  /**
   * Starts an execution of the workflow's current version. A repeated `idempotencyKey` starts
   * nothing and answers the execution the first request started as it is now (`duplicate`): its
   * status and the version it runs, which stays its own when the workflow was updated since.
   */
  async execute(
    workflowId: string,
    request: {
      trigger_data?: unknown;
      trigger_type?: string;
      idempotencyKey?: string;
      traceparent?: string;
      /** Over the definition's priority (-100…100). */
      priority?: number;
    } = {},
  ): Promise<Executed> {
    const input = executionInput(await this.definitions.get(workflowId), request, this.engine.config.maxPayloadBytes);
    if (request.idempotencyKey === undefined) {
      // a debounced start answers the execution of its window, not a new one
      const id = await this.begin(null, workflowId, input, newId('ex'), request.traceparent);
      return { ...this.accepted(workflowId, id), workflow_version: input.version, duplicate: false };
    }
    const key = checkName('Idempotency-Key', request.idempotencyKey, 200);
    const { runId, duplicate } = await this.engine.runtime.startKeyed({
      ...keyed(workflowId, key),
      name: (tx) => this.name(tx, workflowId, key, input, request.traceparent),
      begin: async (tx, id) =>
        void (joins(input) || (await this.begin(tx, workflowId, input, id, request.traceparent))),
    });
    if (!duplicate) return { ...this.accepted(workflowId, runId), workflow_version: input.version, duplicate: false };
    // retention deletes a run and its keys together: only a race with it finds the key without the run
    const view = await this.engine.runtime.view(runId).catch(() => undefined);
    if (!view)
      throw new NotFoundError(
        `execution ${runId} of workflow ${workflowId}, started with this Idempotency-Key, was just deleted (retention): send the request again`,
      );
    return {
      execution_id: runId,
      workflow_id: workflowId,
      workflow_version: (view.input as ExecutionInput).version,
      status: STATUS[view.status],
      duplicate: true,
    };
  }

  /**
   * Starts an execution in the caller's transaction (a subscription handler's, a scheduler's): it
   * exists only if that commits. A repeated `key` returns the execution the first call started and
   * writes nothing; a concurrent call with the same key waits for the first to commit, then returns
   * its execution (`runtime.startKeyed`). Every check runs before the first write, so a thrown
   * error leaves `tx` as it was.
   *
   * @example
   * await store.transaction((tx) => executions.startIn(tx, 'wf_01J…', { trigger_data: { id: 'evt_1' }, trigger_type: 'event' }, 'evt_1:rule_01J…'));
   */
  async startIn(
    tx: Store,
    workflowId: string,
    request: { trigger_data?: unknown; trigger_type?: string; traceparent?: string },
    key: string,
  ): Promise<{ execution_id: string; workflow_id: string; status: ExecutionStatus }> {
    const checked = checkName('key', key, 200);
    let input: ExecutionInput | undefined;
    const { runId } = await this.engine.runtime.startKeyed({
      ...keyed(workflowId, checked),
      tx,
      name: async (t) => {
        // read through the transaction: on SQLite a read outside it would wait for this very transaction
        const wf = (await t.projectionGet({ name: WORKFLOW_VIEW, key: workflowId })) as StoredWorkflow | undefined;
        if (!wf) throw new NotFoundError(`workflow ${workflowId} not found`);
        input = executionInput(wf, request, this.engine.config.maxPayloadBytes);
        return this.name(t, workflowId, checked, input, request.traceparent);
      },
      begin: async (t, id) =>
        void (joins(input!) || (await this.begin(t, workflowId, input!, id, request.traceparent))),
    });
    return this.accepted(workflowId, runId);
  }

  /**
   * The execution a key names: a new one, or for a debounced (batched) workflow the run of its key's window (batch),
   * joined here (its id is known only once joined). The window's lock is taken before the key is read, so a start of
   * the same key that committed first is found and this one joins nothing (`joinedBy`).
   */
  private async name(tx: Store, workflowId: string, key: string, input: ExecutionInput, traceparent?: string) {
    if (!joins(input)) return named(newId('ex'));
    // the run's keys and flow as its start resolves them (the id names cancel_on's matches only, not read here)
    const run = executionStart(input, '');
    const { scope, runOf } = keyed(workflowId, key);
    const stream = keyStream(scope, key);
    const first = await joinedBy(this.engine.journal, tx, this.interpreter, run.input, run.options, stream, runOf);
    return named(first ?? (await this.begin(tx, workflowId, input, newId('ex'), traceparent)));
  }

  /**
   * Starts execution `id` in `tx`, or without one in the next group commit: its run, and its row in the workflow's
   * list. Answers the run's id: a debounced start's is the run of its window.
   */
  private async begin(
    tx: Store | null,
    workflowId: string,
    base: ExecutionInput,
    id: string,
    traceparent?: string,
  ): Promise<string> {
    const { input, options } = executionStart(base, id, traceparent);
    const index = (t: Store, runId: string) =>
      t.projectionPut({ name: INDEX, key: `${workflowId}:${runId}`, value: { execution_id: runId } });
    if (options.debounce === undefined && options.batch === undefined) {
      const run = await this.engine.runtime.start(this.interpreter, input, {
        id,
        ...options,
        ...(tx ? { tx } : {}),
        also: (t) => index(t, id),
      });
      return run.id;
    }
    // a debounced (batched) start joins its key's window (batch): its run is the execution, its id known once started
    return (tx ?? this.store).transaction(async (t) => {
      const run = await this.engine.runtime.start(this.interpreter, input, { ...options, tx: t });
      await index(t, run.id);
      return run.id;
    });
  }

  /** Newest first, `limit` per page; `last_key` of a page continues after it and is null on the last one. */
  async list(
    workflowId: string,
    options: { limit?: number; last_key?: string | null } = {},
  ): Promise<{ executions: ExecutionSummary[]; count: number; last_key: string | null }> {
    const limit = options.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw new ValidationError('limit', `must be a whole number from 1 to 100 (got ${options.limit})`);
    const before = options.last_key ? `${workflowId}:${options.last_key}` : undefined;
    const rows = await this.store.projectionList({
      name: INDEX,
      prefix: `${workflowId}:`,
      limit: limit + 1,
      backwards: true,
      ...(before ? { before } : {}),
    });
    const page = rows.slice(0, limit).map((row) => (row.value as { execution_id: string }).execution_id);
    // a summary needs the view only: no step stats, no links
    const records = await Promise.all(page.map(async (id) => record(await this.view(workflowId, id))));
    const executions = records.map(
      (r): ExecutionSummary => ({
        workflow_id: r.workflow_id,
        execution_id: r.execution_id,
        workflow_version: r.workflow_version,
        status: r.status,
        trigger_type: r.trigger_type,
        created_at: r.created_at,
        started_at: r.started_at,
        finished_at: r.finished_at,
        error: r.error,
      }),
    );
    return { executions, count: executions.length, last_key: rows.length > limit ? (page.at(-1) ?? null) : null };
  }

  async get(workflowId: string, executionId: string): Promise<ExecutionRecord> {
    const view = await this.view(workflowId, executionId);
    const [stats, reruns, cancel] = await Promise.all([
      readStepStats(this.store, workflowId),
      this.store.projectionGet({ name: LINKS, key: executionId }) as Promise<ExecutionLink[] | undefined>,
      this.reasons.get(executionId),
    ]);
    const cancelled = { cancel_reason: cancel?.reason ?? null, cancelled_by: cancel?.by ?? null };
    return { ...record(view, { ...(stats ? { stats } : {}), reruns: reruns ?? [] }), ...cancelled };
  }

  /**
   * Starts a new execution that reuses what `executionId` recorded for the steps before `from_step`
   * (they are not run again) and runs the rest, with the original's trigger data or `trigger_data`.
   * Both executions show the link (`rerun_of`, `reruns`).
   */
  async rerun(
    workflowId: string,
    executionId: string,
    request: { from_step?: string; trigger_data?: Record<string, unknown>; timeouts?: Record<string, unknown> } = {},
  ): Promise<{ execution_id: string; workflow_id: string; status: ExecutionStatus }> {
    const view = await this.view(workflowId, executionId);
    const input = view.input as ExecutionInput;
    // without from_step: from the first step, reusing nothing
    const from = request.from_step ?? input.steps[0]!.id;
    const reuse = reuseForRerun(record(view), input, from);
    const trigger = request.trigger_data ?? input.trigger_data;
    checkJson('trigger_data', trigger, this.engine.config.maxPayloadBytes);
    // longer timeouts (brief 004 §7.2) change this execution's steps; its rerun_of says which
    const timed =
      request.timeouts && Object.keys(request.timeouts).length > 0
        ? rerunTimeouts(input.steps, request.timeouts)
        : null;
    const link = { execution_id: executionId, from_step: from, ...(timed ? { timeouts_seconds: timed.seconds } : {}) };
    return this.continueFrom(
      view.id,
      { ...input, trigger_data: trigger, ...(timed ? { steps: timed.steps } : {}) },
      reuse,
      link,
    );
  }

  /**
   * Retries the failed branches of a partly failed execution (all of them, or those named) as a new
   * execution that reuses every step that succeeded: no succeeded step runs again.
   */
  async retry(
    workflowId: string,
    executionId: string,
    request: { branches?: string[] } = {},
  ): Promise<{ execution_id: string; workflow_id: string; status: ExecutionStatus; branches: string[] }> {
    const view = await this.view(workflowId, executionId);
    if (view.status !== 'partial_success' && view.status !== 'failed')
      throw new ConflictError(
        `execution ${executionId} is ${STATUS[view.status]}: only a partly failed or failed execution is retried`,
      );
    const input = view.input as ExecutionInput;
    const { reuse, branches } = reuseForRetry(record(view), input, request.branches);
    const started = await this.continueFrom(view.id, input, reuse, { execution_id: executionId, branches });
    return { ...started, branches };
  }

  /** Starts the rerun `link` describes, in `tx` (an automatic one: the failure's) or a transaction of its own. */
  private async continueFrom(
    from: string,
    base: ExecutionInput,
    reuse: Record<string, Reused>,
    link: ExecutionLink,
    within?: Store,
  ) {
    const { reuse: _r, rerun_of: _o, ...input } = base;
    // a rerun is one deliberate start: it joins no debounce window, no batch (it keeps its batch's trigger data)
    const { debounce: _d, batch: _b, ...flow } = input.flow ?? {};
    const next: ExecutionInput = { ...input, flow, reuse, rerun_of: link };
    const id = newId('ex');
    await (within ?? this.store).transaction(async (tx) => {
      await this.begin(tx, input.workflow_id, next, id);
      await this.engine.journal.append(
        linkStream(from),
        [
          {
            type: 'execution.rerun',
            data: {
              execution_id: id,
              ...(link.from_step ? { from_step: link.from_step } : {}),
              ...(link.branches ? { branches: link.branches } : {}),
              ...(link.fallback ? { fallback: link.fallback } : {}),
            },
          },
        ],
        { tx },
      );
    });
    return this.accepted(input.workflow_id, id);
  }

  /**
   * Cancels a running execution as its user, journaling `reason` (shown as its `cancel_reason`, `cancelled_by: 'user'`)
   * and `delete_artifacts`, which its compensations read as `{{cancel.delete_artifacts}}`. A finished one → ConflictError.
   */
  async cancel(
    workflowId: string,
    executionId: string,
    reason?: string,
    options: { delete_artifacts?: boolean; actor?: string } = {},
  ): Promise<void> {
    const view = await this.view(workflowId, executionId);
    if (isTerminal(view.status))
      throw new ConflictError(`execution ${executionId} has already ended (${STATUS[view.status]})`);
    const also = {
      ...(options.delete_artifacts ? { delete_artifacts: true } : {}),
      ...(options.actor ? { actor: options.actor } : {}),
    };
    await this.engine.runtime.cancel(executionId, reason, also);
  }

  private async view(workflowId: string, executionId: string): Promise<RunView> {
    const view = await this.engine.runtime.view(executionId).catch(() => undefined);
    if (!view || view.workflow !== STORED_WORKFLOW || (view.input as ExecutionInput).workflow_id !== workflowId) {
      throw new NotFoundError(`execution ${executionId} of workflow ${workflowId} not found`);
    }
    return view;
  }

  private accepted(workflowId: string, id: string) {
    return { execution_id: id, workflow_id: workflowId, status: 'pending' as ExecutionStatus };
  }
}

/** Retention deleted a run: an execution's row in the workflow's index goes with it. */
export async function pruneExecution(tx: Store, run: RunView): Promise<void> {
  if (run.workflow !== STORED_WORKFLOW) return;
  await tx.projectionDelete({ name: INDEX, key: `${(run.input as ExecutionInput).workflow_id}:${run.id}` });
}

/** Whether an execution's start joins its key's debounce window or batch: its run id is known once joined. */
function joins(input: ExecutionInput): boolean {
  return input.flow?.debounce !== undefined || input.flow?.batch !== undefined;
}
