import type { TimelineEvent } from './source.js';
import { RUN_EVENT } from '../runtime/events.js';

/** `time  type  detail`: the detail is the event's gist (a step's name and attempt, an error), cut to 100 characters. */
export function timelineLine(event: TimelineEvent): string {
  return `${new Date(event.timestamp).toISOString()}  ${event.type.padEnd(22)}  ${cut(detail(event))}`;
}

/** When a retry is due, said plainly: `14:02:07 (in 4s)`. */
export function dueAt(ms: number, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((ms - now) / 1000));
  return `${new Date(ms).toISOString().slice(11, 19)} (in ${seconds < 120 ? `${seconds}s` : `${Math.round(seconds / 60)}m`})`;
}

function detail(event: TimelineEvent): string {
  const d = event.data;
  const at = (ms: unknown) => (typeof ms === 'number' ? new Date(ms).toISOString() : '');
  switch (event.type) {
    case RUN_EVENT.runStarted:
      return `${d.workflow}${d.input?.workflow_id ? ` ${d.input.workflow_id} v${d.input.version}` : ''}`;
    case RUN_EVENT.stepStarted:
      return `${d.name} (attempt ${d.attempt})`;
    case RUN_EVENT.stepCompleted:
      return `${d.name} → ${JSON.stringify(d.output)}`;
    case RUN_EVENT.stepFailed:
      return `${d.name} (attempt ${d.attempt}): ${d.error}${d.retryAt ? `; retry at ${at(d.retryAt)}` : ''}`;
    case RUN_EVENT.sleepStarted:
      return `${d.name} until ${at(d.until)}`;
    case RUN_EVENT.waitStarted:
      return `${d.name}${d.deadline ? ` until ${at(d.deadline)}` : ''}`;
    case RUN_EVENT.waitCompleted:
    case RUN_EVENT.signalSent:
      return `${d.name} ${JSON.stringify(d.payload)}`;
    case RUN_EVENT.runCompleted:
      return JSON.stringify(d.output);
    case RUN_EVENT.runFailed:
      return String(d.error);
    case RUN_EVENT.runCancelRequested:
      return String(d.reason ?? '');
    case RUN_EVENT.runCancelled:
      return d.compensations ? `compensations: ${d.compensations.ran} ran, ${d.compensations.failed} failed` : '';
    case RUN_EVENT.childStarted:
    case RUN_EVENT.childCompleted:
    case RUN_EVENT.childFailed:
      return `${d.name} ${d.childId}${d.error ? `: ${d.error}` : ''}`;
    case RUN_EVENT.compensationStarted:
    case RUN_EVENT.compensationCompleted:
    case RUN_EVENT.compensationFailed:
      return `${d.name}${d.error ? `: ${d.error}` : ''}`;
    default:
      return typeof d.name === 'string' ? d.name : JSON.stringify(event.data);
  }
}

function cut(text: string): string {
  return text.length > 100 ? `${text.slice(0, 99)}…` : text;
}
