import type { Engine } from '../engine.js';
import { iso } from '../iso.js';
import { type EventHandler, PASS_OVER, type SubscribeOptions } from '../journal/subscription.js';
import type { RunView } from '../runtime/read/view.js';
import type { StoredEvent } from '../storage/store.js';
import { type Delivery, deliveryId, deliveryKey, type Deliveries } from './deliveries.js';
import { JOURNAL_TYPES, NOTIFY_QUEUE, notifyEventOf, type NotifyEvent } from './events.js';
import type { NotificationRecord, NotificationRegistry } from './registry.js';
import { renderBody, type BodyScope } from './template.js';

/** A run's output is sent with it when its JSON is at most this long. */
const MAX_OUTPUT_BYTES = 16 * 1024;

/** The facts of one journal event a notification may match and render. */
export interface Occurrence {
  type: NotifyEvent;
  scope: BodyScope;
  workflow: string | null;
  queue: string | null;
  runId: string | null;
  /** A timeout warning's time (ms, database clock): when the run passes `warn_at` of its timeout. */
  warning?: { start: number; deadline: number };
}

interface Prepared {
  occurrence: Occurrence;
  targets: NotificationRecord[];
}

/**
 * The two halves of the notifications' subscription: `prepare` reads, outside any transaction, which enabled
 * notifications want the event (by type and filter) and what it is about (its run, its task); `handler` enqueues
 * one delivery task per notification in the transaction that advances the cursor, with the idempotency key
 * `<notification id>:<event position>`, and writes the delivery's row. A redelivered event so enqueues nothing new,
 * and the delivery id derived from the same pair is the one every attempt carries.
 */
export function intake(
  engine: Engine,
  registry: NotificationRegistry,
  deliveries: Deliveries,
  options: { maxAttempts: number },
): { subscribe: SubscribeOptions; handler: EventHandler } {
  // An event no notification wants is passed over: no transaction of its own (every run's end is one of these, and
  // with none wanted each took a connection for a transaction that only moved the cursor).
  const prepare = async (event: StoredEvent): Promise<Prepared | typeof PASS_OVER> => {
    const type = notifyEventOf(event);
    if (type === null) return PASS_OVER;
    const wanting = (await registry.records()).filter((n) => n.enabled && n.events.includes(type));
    if (wanting.length === 0) return PASS_OVER;
    const occurrence = await describe(engine, event, type);
    if (occurrence === null) return PASS_OVER;
    const targets = wanting.filter((n) => matches(n, occurrence));
    return targets.length === 0 ? PASS_OVER : { occurrence, targets };
  };
  const handler: EventHandler = async (event, { tx, prepared }) => {
    if (!prepared) return;
    const { occurrence, targets } = prepared as Prepared;
    for (const n of targets) {
      const id = deliveryId(n.id, event.position);
      const key = deliveryKey(n.id, event.timestamp, id);
      const { warning } = occurrence;
      const deliverAt = warning
        ? Math.round(warning.start + n.warnAt * (warning.deadline - warning.start))
        : event.timestamp;
      const { task, created } = await engine.queue.enqueue(
        NOTIFY_QUEUE,
        { key },
        { tx, idempotencyKey: `${n.id}:${event.position}`, maxAttempts: options.maxAttempts, runAt: deliverAt },
      );
      if (!created) continue;
      const scope = { ...occurrence.scope, event: { ...occurrence.scope.event, delivery_id: id } };
      const delivery: Delivery = {
        id,
        notificationId: n.id,
        key,
        event: occurrence.type,
        position: event.position,
        runId: occurrence.runId,
        taskId: task.id,
        status: warning ? 'scheduled' : 'pending',
        // a warning renders when it is due, with the run as it is then
        body: warning ? null : JSON.stringify(renderBody(n.body, scope)),
        attempts: [],
        reason: null,
        createdAt: event.timestamp,
        deliverAt,
        updatedAt: event.timestamp,
      };
      await deliveries.add(tx, delivery);
    }
  };
  return {
    subscribe: {
      types: JOURNAL_TYPES,
      filter: (event) => notifyEventOf(event) !== null,
      prepare,
    },
    handler,
  };
}

function matches(n: NotificationRecord, o: Occurrence): boolean {
  if (n.filter.workflow !== undefined && n.filter.workflow !== o.workflow) return false;
  if (n.filter.queue !== undefined && n.filter.queue !== o.queue) return false;
  return true;
}

/** What a journal event is about; null for a dead task of the notifications' own queue (it would notify itself). */
async function describe(engine: Engine, event: StoredEvent, type: NotifyEvent): Promise<Occurrence | null> {
  const base = { type, at: iso(event.timestamp), position: event.position };
  if (type === 'task.dead') {
    const taskId = event.streamId.slice('task:'.length);
    const task = await engine.queue.get(taskId).catch(() => null);
    if (task === null || task.queue === NOTIFY_QUEUE) return null;
    const error = (event.data as { error?: string }).error ?? task.lastError;
    const scope = { event: { ...base, task: { id: task.id, queue: task.queue, attempts: task.attempts, error } } };
    return { type, scope: { ...scope, run: null }, workflow: null, queue: task.queue, runId: null };
  }
  const runId = event.streamId.slice('run:'.length);
  const view = await engine.run(runId).catch(() => null);
  const extra: Record<string, unknown> = {};
  if (type === 'approval.waiting') {
    const request = view?.steps.filter((s) => s.name.startsWith('tool.request:')).pop();
    extra.approval = {
      signal: (event.data as { name: string }).name,
      tool: request ? request.name.slice('tool.request:'.length) : null,
    };
  }
  let warning: Occurrence['warning'];
  if (type === 'run.timeout_warning') {
    const deadline = (event.data as { deadline: number }).deadline;
    warning = { start: event.timestamp, deadline };
    extra.deadline = iso(deadline);
  }
  return {
    type,
    scope: { event: { ...base, ...extra }, run: view ? runRecord(view) : { id: runId } },
    workflow: view?.workflow ?? (event.data as { workflow?: string }).workflow ?? null,
    queue: null,
    runId,
    ...(warning ? { warning } : {}),
  };
}

/** A run as a notification shows it (snake_case, as the API does); its output only when small. */
export function runRecord(view: RunView): Record<string, unknown> {
  const output = JSON.stringify(view.output ?? null);
  return {
    id: view.id,
    workflow: view.workflow,
    version: view.version ?? null,
    status: view.status,
    error: view.error,
    ...(output.length <= MAX_OUTPUT_BYTES ? { output: view.output ?? null } : {}),
    created_at: iso(view.createdAt),
    updated_at: iso(view.updatedAt),
  };
}
