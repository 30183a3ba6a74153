import { z } from 'zod';
import { iso } from '../../iso.js';
import type { Task, TaskState } from '../../runtime/operate/operator.js';
import { deadTask } from '../schemas.js';

/*
 * A task as the API shows it: in the task protocol (docs/protocol.md) with what a remote worker needs, in the
 * operator's listings (GET /tasks, GET /dlq) with what an operator reads.
 */

const time = z.string().describe('ISO 8601, UTC');

export const taskRecordSchema = z.object({
  id: z.string(),
  queue: z.string(),
  state: z.enum(['ready', 'running', 'completed', 'dead']),
  payload: z.unknown(),
  attempts: z.int().describe('claims so far, this one included: 1 on the first attempt'),
  max_attempts: z.int(),
  priority: z.int(),
  ordering_key: z.string().nullable(),
  idempotency_key: z.string().nullable(),
  run_at: time,
  created_at: time,
  updated_at: time,
  last_error: z.string().nullable(),
  result: z.unknown().optional().describe('once completed'),
});

export const claimedTaskSchema = taskRecordSchema.extend({ lease_token: z.string(), lease_expires_at: time });

export type TaskRecord = z.infer<typeof taskRecordSchema>;
export type ClaimedTaskRecord = z.infer<typeof claimedTaskSchema>;

export function taskRecord(t: Task): TaskRecord {
  return {
    id: t.id,
    queue: t.queue,
    state: t.state,
    payload: t.payload,
    attempts: t.attempts,
    max_attempts: t.maxAttempts,
    priority: t.priority,
    ordering_key: t.orderingKey,
    idempotency_key: t.idempotencyKey,
    run_at: iso(t.runAt),
    created_at: iso(t.createdAt),
    updated_at: iso(t.updatedAt),
    last_error: t.lastError,
    ...(t.state === 'completed' ? { result: t.result } : {}),
  };
}

/** A task just claimed: its record with the lease that fences every write of the attempt. */
export function claimedTask(t: Task): ClaimedTaskRecord {
  return { ...taskRecord(t), lease_token: t.leaseToken!, lease_expires_at: iso(t.leaseExpiresAt!) };
}

/** Every state a task is in (docs/lifecycle.md): what GET /tasks filters on. */
export const TASK_STATES = ['ready', 'running', 'completed', 'dead'] as const satisfies readonly TaskState[];

/** A task as GET /tasks lists it: a dead task's fields (`deadTask`, GET /dlq), then its state, ordering key and run time. */
export const taskListSchema = deadTask.extend({
  state: z.enum(TASK_STATES),
  ordering_key: z.string().nullable(),
  run_at: z.string(),
});

export type DeadTaskRecord = z.infer<typeof deadTask>;
export type TaskListRecord = z.infer<typeof taskListSchema>;

export function deadTaskRecord(t: Task): DeadTaskRecord {
  return {
    id: t.id,
    queue: t.queue,
    attempts: t.attempts,
    max_attempts: t.maxAttempts,
    last_error: t.lastError,
    payload: t.payload,
    created_at: iso(t.createdAt),
    updated_at: iso(t.updatedAt),
  };
}

export function taskListRecord(t: Task): TaskListRecord {
  return { ...deadTaskRecord(t), state: t.state, ordering_key: t.orderingKey, run_at: iso(t.runAt) };
}
