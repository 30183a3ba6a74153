import type { Duration } from '../duration.js';
import type { ClaimedTaskRecord, TaskRecord } from '../server/records/tasks.js';

/* The task protocol as the client speaks it (docs/protocol.md): its header, a new task's fields, the tasks it answers. */

/** The task protocol's major version this client speaks. */
export const PROTOCOL = { 'runledger-protocol': '1' };

/** A task as the task protocol answers it. */
export type ProtocolTask = TaskRecord;

/** A task just claimed, with the lease that fences every write of the attempt. */
export interface ClaimedTask extends ClaimedTaskRecord {}

export interface EnqueueTaskOptions {
  idempotencyKey?: string;
  orderingKey?: string;
  priority?: number;
  /** Not before now + delay; or `runAt`, not both. */
  delay?: Duration;
  runAt?: Date | string;
  maxAttempts?: number;
}

export interface Enqueued {
  task: ProtocolTask;
  created: boolean;
}

/** A new task's fields as the protocol names them; the options left out are left out. */
export function newTask(o: EnqueueTaskOptions): Record<string, unknown> {
  const fields = {
    idempotency_key: o.idempotencyKey,
    ordering_key: o.orderingKey,
    priority: o.priority,
    delay: o.delay,
    run_at: o.runAt instanceof Date ? o.runAt.toISOString() : o.runAt,
    max_attempts: o.maxAttempts,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}
