import type { JobFault } from './faults.js';
import type { World } from './world.js';
import { now } from './world.js';

/**
 * The states of a layout proposal and a render job: queued → processing → complete | failed, or cancelled before it
 * ends; with an asynchronous cancel (a fault rule's `cancel`), `cancelling` comes between.
 */
export type JobStatus = 'queued' | 'processing' | 'complete' | 'failed' | 'cancelling' | 'cancelled';

export const JOB_FINAL: ReadonlySet<string> = new Set(['complete', 'failed', 'cancelled']);

/** What layout proposals and render jobs share. */
export interface Job {
  id: string;
  status: JobStatus;
  error: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  callback_url: string | null;
  /** Real milliseconds the processing takes, and when it began: the `progress` of a view. */
  processingRealMs: number;
  processingSince: number | null;
  /** How many times the final callback is sent (a fault can make it more than 1). */
  callbackCopies: number;
  /** While `cancelling` by polls: how many more GETs still answer `cancelling`. */
  cancellingPolls?: number;
}

export function newJob(world: World, prefix: string, callbackUrl: string | null): Job {
  const at = now();
  return {
    id: world.random.id(prefix),
    status: 'queued',
    error: null,
    created_at: at,
    updated_at: at,
    started_at: null,
    finished_at: null,
    callback_url: callbackUrl,
    processingRealMs: 0,
    processingSince: null,
    callbackCopies: 1,
  };
}

/** 0–100: how far the processing is (never 100 before it is complete). */
export function progress(job: Job): number {
  if (job.status === 'complete') return 100;
  if (job.processingSince === null) return 0;
  const end = job.finished_at ? Date.parse(job.finished_at) : Date.now();
  return Math.min(99, Math.floor((100 * (end - job.processingSince)) / Math.max(1, job.processingRealMs)));
}

/**
 * Walks a job: `queuedMs` later it is `processing`, `processingMs` after that `complete` (`succeed`
 * runs first, e.g. to make the artifact) — or `failed` / still processing for ever, as `fault` says.
 * Times are service milliseconds, varied ±20 % by the seed and scaled by speed.
 */
export function runJob(
  world: World,
  job: Job,
  times: { queuedMs: number; processingMs: number },
  fault: JobFault | undefined,
  succeed: () => void,
  view: () => unknown,
): void {
  const queued = world.random.vary(times.queuedMs);
  const processing = world.random.vary(times.processingMs);
  job.callbackCopies = fault?.callbackCopies ?? 1;
  world.clock.after(job.id, queued, () => {
    job.status = 'processing';
    job.started_at = job.updated_at = now();
    job.processingSince = Date.now();
    job.processingRealMs = world.clock.real(processing);
    if (fault?.kind === 'hang') return;
    world.clock.after(job.id, processing, () => {
      if (fault?.kind === 'fail') {
        job.status = 'failed';
        job.error = fault.error ?? 'failed (injected fault)';
      } else {
        succeed();
        job.status = 'complete';
      }
      job.finished_at = job.updated_at = now();
      if (job.callback_url) world.callbacks.send(job.callback_url, view(), job.callbackCopies);
    });
  });
}

/** A cancel the service takes its time over (a fault rule's `cancel`): `cancelling` for some polls or ms, or for ever. */
export interface CancelFault {
  kind: 'async' | 'never';
  polls?: number;
  ms?: number;
}

/**
 * Cancels a job that has not ended; one that has is left as it is (cancelling it is still a success, 200).
 * With `fault` the cancel is accepted (202) and the job is `cancelling` until the fault says it is `cancelled`
 * (a repeat cancel meanwhile answers 202 again and changes nothing). Returns the status to answer.
 */
export function cancelJob(world: World, job: Job, view: () => unknown, fault?: CancelFault): 200 | 202 {
  if (job.status === 'cancelling') return 202;
  if (JOB_FINAL.has(job.status)) return 200;
  world.clock.cancel(job.id);
  if (!fault) {
    cancelled(world, job, view);
    return 200;
  }
  job.status = 'cancelling';
  job.updated_at = now();
  if (fault.kind === 'async' && fault.ms !== undefined)
    world.clock.after(job.id, fault.ms, () => cancelled(world, job, view));
  else if (fault.kind === 'async') job.cancellingPolls = fault.polls ?? 1;
  return 202;
}

/** A GET of the job: one of the polls a `cancelling` job answers before it is `cancelled`. */
export function polled(world: World, job: Job, view: () => unknown): void {
  if (job.status !== 'cancelling' || job.cancellingPolls === undefined) return;
  if (job.cancellingPolls > 0) job.cancellingPolls -= 1;
  else cancelled(world, job, view);
}

function cancelled(world: World, job: Job, view: () => unknown): void {
  job.status = 'cancelled';
  delete job.cancellingPolls;
  job.finished_at = job.updated_at = now();
  if (job.callback_url) world.callbacks.send(job.callback_url, view(), job.callbackCopies);
}
