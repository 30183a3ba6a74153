import type { Engine } from '../engine.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import { checkJson, checkName } from '../json.js';
import { isTerminal, type RunStatus, type RunView, type StepView } from '../runtime/view.js';
import type { Workflow } from '../runtime/workflow.js';
import type { Store } from '../storage/store.js';
import type { Definitions, StoredWorkflow } from './definitions.js';
import { STORED_WORKFLOW, type ExecutionInput } from './interpreter.js';

export type ExecutionStatus = 'pending' | 'running' | 'success' | 'failed' | 'cancelled';
export type StepStatus = 'pending' | 'running' | 'success' | 'failed' | 'skipped';

export interface StepRecord {
  step_id: string;
  type: string;
  status: StepStatus;
  attempts: number;
  started_at: string | null;
  finished_at: string | null;
  duration_ms: number | null;
  input: unknown;
  output: unknown;
  error: string | null;
}

export interface ExecutionSummary {
  workflow_id: string;
  execution_id: string;
  workflow_version: number;
  status: ExecutionStatus;
  trigger_type: string;
  started_at: string;
  finished_at: string | null;
  error: string | null;
}

export interface ExecutionRecord extends ExecutionSummary {
  trigger_data: Record<string, unknown>;
  steps: StepRecord[];
}

const INDEX = 'execution';
/** The projection `Definitions` keeps each workflow's current version in (read here through a caller's transaction). */
const WORKFLOW_VIEW = 'workflow';
const executionKeyStream = (workflowId: string, key: string) => `execution-key:${workflowId}:${key}`;
const STATUS: Record<RunStatus, ExecutionStatus> = { pending: 'pending', running: 'running', sleeping: 'running', waiting: 'running', succeeded: 'success', failed: 'failed', cancelled: 'cancelled' };
const STEP_STATUS: Record<StepView['status'], StepStatus> = { running: 'running', retrying: 'running', ok: 'success', error: 'failed' };
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

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
    private readonly definitions: Definitions,
    private readonly interpreter: Workflow<ExecutionInput>,
  ) {}

  /**
   * Starts an execution of the workflow's current version. A repeated `idempotencyKey` returns the
   * execution the first request started and starts nothing.
   */
  async execute(workflowId: string, request: { trigger_data?: unknown; trigger_type?: string; idempotencyKey?: string; traceparent?: string } = {}): Promise<{ execution_id: string; workflow_id: string; status: ExecutionStatus }> {
    const input = this.input(await this.definitions.get(workflowId), request);
    const keyStream = request.idempotencyKey === undefined ? null : executionKeyStream(workflowId, checkName('Idempotency-Key', request.idempotencyKey, 200));
    for (let attempt = 1; ; attempt++) {
      if (keyStream !== null) {
        const [first] = await this.engine.store.eventReadStream({ streamId: keyStream, limit: 1 });
        if (first) return this.accepted(workflowId, (first.data as { execution_id: string }).execution_id);
      }
      const id = newId('ex');
      try {
        await this.engine.store.transaction((tx) => this.begin(tx, workflowId, input, id, keyStream, request.traceparent));
        return this.accepted(workflowId, id);
      } catch (error) {
        // a concurrent request with the same key won: the next round reads its execution
        if (!(error instanceof ConflictError) || keyStream === null || attempt >= 3) throw error;
      }
    }
  }

  /**
   * Starts an execution in the caller's transaction (a subscription handler's, a scheduler's): it
   * exists only if that commits. A repeated `key` returns the execution the first call started and
   * writes nothing; a concurrent call with the same key waits for the first to commit, then returns
   * its execution (on PostgreSQL the losing append is undone by its savepoint, so `tx` stays usable).
   * Every check runs before the first write, so a thrown error leaves `tx` as it was.
   *
   * @example
   * await store.transaction((tx) => executions.startIn(tx, 'wf_01J…', { trigger_data: { id: 'evt_1' }, trigger_type: 'event' }, 'evt_1:rule_01J…'));
   */
  async startIn(tx: Store, workflowId: string, request: { trigger_data?: unknown; trigger_type?: string; traceparent?: string }, key: string): Promise<{ execution_id: string; workflow_id: string; status: ExecutionStatus }> {
    const keyStream = executionKeyStream(workflowId, checkName('key', key, 200));
    const first = async () => ((await tx.eventReadStream({ streamId: keyStream, limit: 1 }))[0]?.data as { execution_id: string } | undefined)?.execution_id;
    const existing = await first();
    if (existing !== undefined) return this.accepted(workflowId, existing);
    // read through `tx`: on SQLite a read outside it would wait for this very transaction
    const wf = (await tx.projectionGet({ name: WORKFLOW_VIEW, key: workflowId })) as StoredWorkflow | undefined;
    if (!wf) throw new NotFoundError(`workflow ${workflowId} not found`);
    const input = this.input(wf, request);
    const id = newId('ex');
    try {
      await this.begin(tx, workflowId, input, id, keyStream, request.traceparent);
    } catch (error) {
      const winner = error instanceof ConflictError ? await first() : undefined;
      if (winner === undefined) throw error;
      return this.accepted(workflowId, winner);
    }
    return this.accepted(workflowId, id);
  }

  /** The run input of an execution of `wf`, checked: a disabled workflow or bad trigger data throws before anything is written. */
  private input(wf: StoredWorkflow, request: { trigger_data?: unknown; trigger_type?: string }): ExecutionInput {
    if (!wf.enabled) throw new ValidationError('enabled', `workflow ${wf.id} is disabled`);
    const trigger = request.trigger_data ?? {};
    if (typeof trigger !== 'object' || trigger === null || Array.isArray(trigger)) throw new ValidationError('trigger_data', 'must be a JSON object');
    checkJson('trigger_data', trigger, this.engine.config.maxPayloadBytes);
    const triggerType = request.trigger_type === undefined ? 'manual' : checkName('trigger_type', request.trigger_type, 64);
    return { workflow_id: wf.id, version: wf.version, steps: wf.steps, trigger_type: triggerType, trigger_data: trigger as Record<string, unknown> };
  }

  private async begin(tx: Store, workflowId: string, input: ExecutionInput, id: string, keyStream: string | null, traceparent?: string): Promise<void> {
    if (keyStream !== null) await this.engine.journal.append(keyStream, [{ type: 'execution.keyed', data: { execution_id: id } }], { tx, expectedVersion: 0 });
    await this.engine.runtime.start(this.interpreter, input, { id, tx, ...(traceparent ? { traceparent } : {}) });
    await tx.projectionPut({ name: INDEX, key: `${workflowId}:${id}`, value: { execution_id: id } });
  }

  /** Newest first, `limit` per page; `last_key` of a page continues after it and is null on the last one. */
  async list(workflowId: string, options: { limit?: number; last_key?: string | null } = {}): Promise<{ executions: ExecutionSummary[]; count: number; last_key: string | null }> {
    const limit = options.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new ValidationError('limit', `must be a whole number from 1 to 100 (got ${options.limit})`);
    const before = options.last_key ? `${workflowId}:${options.last_key}` : undefined;
    const rows = await this.engine.store.projectionList({ name: INDEX, prefix: `${workflowId}:`, limit: limit + 1, backwards: true, ...(before ? { before } : {}) });
    const page = rows.slice(0, limit).map((row) => (row.value as { execution_id: string }).execution_id);
    const records = await Promise.all(page.map((id) => this.get(workflowId, id)));
    const executions = records.map(({ trigger_data: _t, steps: _s, ...summary }) => summary);
    return { executions, count: executions.length, last_key: rows.length > limit ? (page.at(-1) ?? null) : null };
  }

  async get(workflowId: string, executionId: string): Promise<ExecutionRecord> {
    const view = await this.view(workflowId, executionId);
    return record(view);
  }

  /** Cancels a running execution; a finished one → ConflictError. */
  async cancel(workflowId: string, executionId: string): Promise<void> {
    const view = await this.view(workflowId, executionId);
    if (isTerminal(view.status)) throw new ConflictError(`execution ${executionId} has already ${STATUS[view.status] === 'success' ? 'succeeded' : STATUS[view.status]}`);
    await this.engine.cancel(executionId);
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

/** The execution record of a run of the interpreter: every definition step, run or not. */
export function record(view: RunView): ExecutionRecord {
  const input = view.input as ExecutionInput;
  const terminal = isTerminal(view.status);
  const steps = input.steps.map((step): StepRecord => {
    const ran = view.steps.find((s) => s.name === step.id);
    if (!ran) return { step_id: step.id, type: step.type, status: terminal ? 'skipped' : 'pending', attempts: 0, started_at: null, finished_at: null, duration_ms: null, input: null, output: null, error: null };
    return {
      step_id: step.id,
      type: step.type,
      status: STEP_STATUS[ran.status],
      attempts: ran.attempts,
      started_at: iso(ran.startedAt),
      finished_at: iso(ran.finishedAt),
      duration_ms: ran.durationMs,
      input: ran.input,
      output: ran.output,
      error: ran.error,
    };
  });
  return {
    workflow_id: input.workflow_id,
    execution_id: view.id,
    workflow_version: input.version,
    status: STATUS[view.status],
    trigger_type: input.trigger_type,
    trigger_data: input.trigger_data,
    steps,
    started_at: iso(view.createdAt)!,
    finished_at: terminal ? iso(view.updatedAt) : null,
    error: view.error,
  };
}
