import { z } from 'zod';
import type { Task } from '../storage/store.js';

/* A task as the task protocol answers it (docs/protocol.md): the names of GET /tasks, and what a remote worker needs besides. */

const iso = (ms: number) => new Date(ms).toISOString();
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
export function claimedTask(t: Task): TaskRecord & { lease_token: string; lease_expires_at: string } {
  return { ...taskRecord(t), lease_token: t.leaseToken!, lease_expires_at: iso(t.leaseExpiresAt!) };
}
