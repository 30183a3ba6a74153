import { RUN_EVENT } from '../../../src/runtime/events.js';
import { normalStatus } from '../common';
import type { JournalEvent } from './gantt';
import type { ExecutionStep } from './run';

/** How an execution's steps ended, by what they did: a step skipped after a failure did not run, so it is not counted as run. */
export interface StepCounts {
  total: number;
  ran: number;
  succeeded: number;
  failed: number;
  timedOut: number;
  running: number;
  cancelled: number;
  skipped: number;
  /** Taken from an earlier execution by a retry or rerun: they did no work here. */
  reused: number;
  pending: number;
}

/** A retry or rerun journals a step it took from an earlier execution with `input: { reused_from }`. */
export function reusedFrom(step: { input: unknown }): string | null {
  const from = (step.input as { reused_from?: unknown } | null)?.reused_from;
  return typeof from === 'string' ? from : null;
}

/** Counts the steps that do work (a parallel step is counted by its branches' steps, as the server's progress does). */
export function stepCounts(steps: ExecutionStep[]): StepCounts {
  const c: StepCounts = {
    total: 0,
    ran: 0,
    succeeded: 0,
    failed: 0,
    timedOut: 0,
    running: 0,
    cancelled: 0,
    skipped: 0,
    reused: 0,
    pending: 0,
  };
  for (const s of steps) {
    if (s.type === 'parallel') continue;
    c.total++;
    const status = normalStatus(s.status);
    if (status === 'success' && reusedFrom(s) !== null) c.reused++;
    else if (status === 'success') c.succeeded++;
    else if (status === 'failed') c.failed++;
    else if (status === 'timed_out') c.timedOut++;
    else if (status === 'running') c.running++;
    else if (status === 'cancelled') c.cancelled++;
    else if (status === 'skipped') c.skipped++;
    else c.pending++;
  }
  c.ran = c.succeeded + c.failed + c.timedOut;
  return c;
}

/** "3/13 steps ran: 2 succeeded, 1 failed, 10 skipped" (only the kinds there are). */
export function progressText(c: StepCounts): string {
  const parts: Array<[number, string]> = [
    [c.succeeded, 'succeeded'],
    [c.failed, 'failed'],
    [c.timedOut, 'timed out'],
    [c.running, 'running'],
    [c.cancelled, 'cancelled'],
    [c.skipped, 'skipped'],
    [c.reused, 'reused'],
    [c.pending, 'to go'],
  ];
  const detail = parts
    .filter(([n]) => n > 0)
    .map(([n, word]) => `${n} ${word}`)
    .join(', ');
  return `${c.ran}/${c.total} steps ran${detail ? `: ${detail}` : ''}`;
}

/** What an unfinished run is waiting for, from its journal: the sleep it wakes from, or the signal it waits for until its deadline. */
export function pending(
  events: JournalEvent[],
): { kind: 'sleep'; name: string; at: number } | { kind: 'wait'; name: string; at: number | null } | null {
  const open = new Map<string, JournalEvent>();
  for (const e of events) {
    const key = `${e.data?.seq}`;
    if (e.type === RUN_EVENT.sleepStarted || e.type === RUN_EVENT.waitStarted) open.set(key, e);
    else if (
      e.type === RUN_EVENT.sleepCompleted ||
      e.type === RUN_EVENT.waitCompleted ||
      e.type === RUN_EVENT.waitTimedOut
    )
      open.delete(key);
  }
  const last = [...open.values()].at(-1);
  if (!last) return null;
  if (last.type === RUN_EVENT.sleepStarted)
    return { kind: 'sleep', name: String(last.data.name ?? 'sleep'), at: Number(last.data.until) };
  return {
    kind: 'wait',
    name: String(last.data.name ?? 'signal'),
    at: typeof last.data.deadline === 'number' ? last.data.deadline : null,
  };
}
