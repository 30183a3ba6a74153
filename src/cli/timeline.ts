import type { TimelineEvent } from './source.js';

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
    case 'run.started':
      return `${d.workflow}${d.input?.workflow_id ? ` ${d.input.workflow_id} v${d.input.version}` : ''}`;
    case 'step.started':
      return `${d.name} (attempt ${d.attempt})`;
    case 'step.completed':
      return `${d.name} → ${JSON.stringify(d.output)}`;
    case 'step.failed':
      return `${d.name} (attempt ${d.attempt}): ${d.error}${d.retryAt ? `; retry at ${at(d.retryAt)}` : ''}`;
    case 'sleep.started':
      return `${d.name} until ${at(d.until)}`;
    case 'wait.started':
      return `${d.name}${d.deadline ? ` until ${at(d.deadline)}` : ''}`;
    case 'wait.completed':
    case 'signal.sent':
      return `${d.name} ${JSON.stringify(d.payload)}`;
    case 'run.completed':
      return JSON.stringify(d.output);
    case 'run.failed':
      return String(d.error);
    case 'run.cancel_requested':
      return String(d.reason ?? '');
    case 'run.cancelled':
      return d.compensations ? `compensations: ${d.compensations.ran} ran, ${d.compensations.failed} failed` : '';
    case 'child.started':
    case 'child.completed':
    case 'child.failed':
      return `${d.name} ${d.childId}${d.error ? `: ${d.error}` : ''}`;
    case 'compensation.started':
    case 'compensation.completed':
    case 'compensation.failed':
      return `${d.name}${d.error ? `: ${d.error}` : ''}`;
    default:
      return typeof d.name === 'string' ? d.name : JSON.stringify(event.data);
  }
}

function cut(text: string): string {
  return text.length > 100 ? `${text.slice(0, 99)}…` : text;
}
