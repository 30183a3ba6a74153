import type { Engine } from '../engine.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import { checkJson, checkName } from '../json.js';
import { isTerminal, type RunView } from '../runtime/read/view.js';
import type { Store } from '../storage/store.js';
import type { Definitions } from './definitions.js';
import type { Executions } from './executions.js';
import { STATUS, type ExecutionStatus } from './record.js';

/** The projection of batches, keyed by batch id (ids sort by time: a backwards list is newest first). */
export const BATCH = 'batch';
/** The most inputs one batch takes. */
export const MAX_BATCH = 1000;
const EVENT = { started: 'batch.started', cancelled: 'batch.cancelled', keyed: 'batch.keyed' } as const;
const batchStream = (id: string) => `batch:${id}`;
const keyStream = (workflowId: string, key: string) => `batch-key:${workflowId}:${key}`;
/** How many executions' views a read fetches at once. */
const READ_AHEAD = 50;

/** A batch as its projection keeps it: what was started, and the cancel request if one was made. */
interface BatchRow {
  batch_id: string;
  workflow_id: string;
  execution_ids: string[];
  created_at: string;
  cancel_reason: string | null;
}

/** `running` until every execution has ended; then `success`, `partial` (some did not succeed), `failed` or `cancelled`. */
export type BatchStatus = 'running' | 'success' | 'partial' | 'failed' | 'cancelled';

/** A batch as the API shows it. */
export interface BatchRecord {
  batch_id: string;
  workflow_id: string;
  status: BatchStatus;
  /** Executions by status; an execution retention has deleted counts as `deleted`. */
  counts: Record<ExecutionStatus | 'deleted', number>;
  progress: { ended: number; total: number };
  execution_ids: string[];
  created_at: string;
  cancel_reason: string | null;
}

/** What starting a batch answers: a repeated idempotency key, the first batch (`duplicate`), nothing started. */
export interface BatchStarted {
  batch_id: string;
  workflow_id: string;
  total: number;
  execution_ids: string[];
  duplicate: boolean;
}

/**
 * Batches of executions of one stored workflow (brief 004 §15): one execution per input. A batch is
 * the stream `batch:<id>` (`batch.started` names its executions, `batch.cancelled` the cancel
 * request) and a projection row; its status is read from its executions' views.
 *
 * @example
 * const { batch_id } = await batches.start('wf_01J…', { inputs: [{ name: 'Ada' }, { name: 'Alan' }] });
 * (await batches.get(batch_id)).status // 'running', later 'success'
 */
export class Batches {
  constructor(
    private readonly engine: Engine,
    private readonly store: Store,
    private readonly definitions: Definitions,
    private readonly executions: Executions,
  ) {
    engine.journal.project([EVENT.started, EVENT.cancelled], async (event, tx) => {
      if (event.type === EVENT.started)
        return tx.projectionPut({ name: BATCH, key: event.streamId.slice('batch:'.length), value: event.data });
      const key = event.streamId.slice('batch:'.length);
      const row = (await tx.projectionGet({ name: BATCH, key })) as BatchRow | undefined;
      if (row) await tx.projectionPut({ name: BATCH, key, value: { ...row, ...(event.data as object) } });
    });
  }

  /**
   * Starts one execution per input, all in one transaction with the batch: a crash leaves the whole
   * batch or none of it. Each execution is keyed `<batch id>:<index>` through the keyed start, so no
   * input starts twice. A repeated `idempotency_key` (per workflow) starts nothing and answers the first batch.
   */
  async start(workflowId: string, request: { inputs: unknown; idempotency_key?: string }): Promise<BatchStarted> {
    const inputs = this.check(request.inputs);
    const wf = await this.definitions.get(workflowId);
    if (!wf.enabled) throw new ValidationError('enabled', `workflow ${wf.id} is disabled`);
    const key =
      request.idempotency_key === undefined ? undefined : checkName('idempotency_key', request.idempotency_key, 200);
    if (key !== undefined) {
      const first = await this.keyed(workflowId, key);
      if (first) return first;
    }
    const id = newId('bt');
    const started = await this.store.transaction(async (tx): Promise<BatchStarted | undefined> => {
      if (key !== undefined) {
        try {
          const keyEvent = { type: EVENT.keyed, data: { batch_id: id } };
          await this.engine.journal.append(keyStream(workflowId, key), [keyEvent], { tx, expectedVersion: 0 });
        } catch (error) {
          // a concurrent request with the same key committed first: its batch is the one
          if (error instanceof ConflictError) return undefined;
          throw error;
        }
      }
      const ids: string[] = [];
      for (const [i, trigger_data] of inputs.entries()) {
        const request = { trigger_data, trigger_type: 'batch' };
        ids.push((await this.executions.startIn(tx, workflowId, request, `${id}:${i}`)).execution_id);
      }
      const row: BatchRow = {
        batch_id: id,
        workflow_id: workflowId,
        execution_ids: ids,
        created_at: new Date().toISOString(),
        cancel_reason: null,
      };
      await this.engine.journal.append(batchStream(id), [{ type: EVENT.started, data: row }], { tx });
      return { batch_id: id, workflow_id: workflowId, total: ids.length, execution_ids: ids, duplicate: false };
    });
    if (started) return started;
    const winner = await this.keyed(workflowId, key!);
    if (!winner)
      throw new ConflictError(`a batch with idempotency_key ${key} was being started: send the request again`);
    return winner;
  }

  /** The batch with its executions' statuses counted. */
  async get(batchId: string): Promise<BatchRecord> {
    const row = (await this.store.projectionGet({ name: BATCH, key: batchId })) as BatchRow | undefined;
    if (!row) throw new NotFoundError(`batch ${batchId} not found`);
    return this.summarise(row);
  }

  /** Newest first, `limit` per page; `last_key` of a page continues after it and is null on the last one. */
  async list(options: { limit?: number; last_key?: string | null } = {}) {
    const limit = options.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw new ValidationError('limit', `must be a whole number from 1 to 100 (got ${options.limit})`);
    const rows = await this.store.projectionList({
      name: BATCH,
      limit: limit + 1,
      backwards: true,
      ...(options.last_key ? { before: options.last_key } : {}),
    });
    const page = rows.slice(0, limit).map((r) => r.value as BatchRow);
    const batches: BatchRecord[] = [];
    for (const row of page) batches.push(await this.summarise(row));
    return { batches, count: batches.length, last_key: rows.length > limit ? (page.at(-1)?.batch_id ?? null) : null };
  }

  /**
   * Cancels every execution of the batch that has not ended, journaling `reason` with the batch (its
   * `cancel_reason`) and as each execution's, with `actor` (the API key that asked) when given. A batch whose
   * executions have all ended → ConflictError.
   */
  async cancel(batchId: string, reason?: string, actor?: string): Promise<{ batch_id: string; cancelled: number }> {
    const batch = await this.get(batchId);
    if (batch.status !== 'running') throw new ConflictError(`batch ${batchId} has already ended (${batch.status})`);
    const why = reason === undefined ? `batch ${batchId} cancelled` : checkName('reason', reason, 500);
    await this.engine.journal.append(batchStream(batchId), [
      { type: EVENT.cancelled, data: { cancel_reason: why, ...(actor ? { actor } : {}) } },
    ]);
    let cancelled = 0;
    for (const id of batch.execution_ids) {
      try {
        await this.executions.cancel(batch.workflow_id, id, why, actor ? { actor } : {});
        cancelled++;
      } catch (error) {
        // it ended (or retention deleted it) since the batch was read
        if (!(error instanceof ConflictError) && !(error instanceof NotFoundError)) throw error;
      }
    }
    return { batch_id: batchId, cancelled };
  }

  /** The inputs, each a JSON object within the payload limit: the first bad one named by its index. */
  private check(inputs: unknown): Record<string, unknown>[] {
    if (!Array.isArray(inputs)) throw new ValidationError('inputs', 'must be an array of trigger data objects');
    if (inputs.length < 1 || inputs.length > MAX_BATCH)
      throw new ValidationError('inputs', `has ${inputs.length} inputs: a batch takes 1 to ${MAX_BATCH}`);
    for (const [i, input] of inputs.entries()) {
      if (typeof input !== 'object' || input === null || Array.isArray(input))
        throw new ValidationError(`inputs[${i}]`, 'must be a JSON object (the trigger data of one execution)');
      checkJson(`inputs[${i}]`, input, this.engine.config.maxPayloadBytes);
    }
    return inputs as Record<string, unknown>[];
  }

  /** The batch an idempotency key started, as started (`duplicate`), or undefined when the key is free. */
  private async keyed(workflowId: string, key: string): Promise<BatchStarted | undefined> {
    const [first] = await this.engine.journal.readStream(keyStream(workflowId, key), { limit: 1 });
    if (!first) return undefined;
    const batch = await this.get((first.data as { batch_id: string }).batch_id);
    const { batch_id, workflow_id, execution_ids } = batch;
    return { batch_id, workflow_id, total: execution_ids.length, execution_ids, duplicate: true };
  }

  private async summarise(row: BatchRow): Promise<BatchRecord> {
    const counts: BatchRecord['counts'] = {
      pending: 0,
      running: 0,
      success: 0,
      partial_success: 0,
      failed: 0,
      cancelled: 0,
      deleted: 0,
    };
    let ended = 0;
    for (let i = 0; i < row.execution_ids.length; i += READ_AHEAD) {
      const ids = row.execution_ids.slice(i, i + READ_AHEAD);
      const views = await Promise.all(ids.map((id) => this.engine.runtime.view(id).catch(() => undefined)));
      for (const view of views as Array<RunView | undefined>) {
        if (!view) counts.deleted++;
        else counts[STATUS[view.status]]++;
        if (!view || isTerminal(view.status)) ended++;
      }
    }
    const total = row.execution_ids.length;
    return {
      batch_id: row.batch_id,
      workflow_id: row.workflow_id,
      status: ended < total ? 'running' : outcome(counts, total, row.cancel_reason !== null),
      counts,
      progress: { ended, total },
      execution_ids: row.execution_ids,
      created_at: row.created_at,
      cancel_reason: row.cancel_reason,
    };
  }
}

/** An ended batch's status: every execution succeeded, a cancel request stopped some, none succeeded, or some did. */
function outcome(counts: BatchRecord['counts'], total: number, cancelRequested: boolean): BatchStatus {
  if (counts.success === total) return 'success';
  if (cancelRequested && counts.cancelled > 0) return 'cancelled';
  if (counts.success === 0 && counts.partial_success === 0) return counts.cancelled === total ? 'cancelled' : 'failed';
  return 'partial';
}
