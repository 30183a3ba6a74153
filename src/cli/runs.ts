import type { Command } from 'commander';
import { createEngine, type Engine } from '../engine.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { runStream } from '../runtime/history.js';
import { currentStatus, readRunView, RUN_STATUSES, type RunView } from '../runtime/view.js';
import { watchEvents } from '../journal/wakeup.js';
import { listRuns, runTail } from '../runtime/watch.js';
import type { Store, StoredEvent } from '../storage/store.js';

const STATUSES = new Set<string>(RUN_STATUSES);

/** Mirrors `runledger`'s own rule: the flag, then RUNLEDGER_DATABASE / RUNLEDGER_DB, then DATABASE_URL, then ./runledger.db. */
function database(flag: string | undefined): string {
  return flag ?? process.env.RUNLEDGER_DATABASE ?? process.env.RUNLEDGER_DB ?? process.env.DATABASE_URL ?? 'runledger.db';
}

/** `runledger runs list`: runs of every kind, read from the database directly. */
export function runCommands(program: Command, print: (line: string) => void): void {
  const runs = program.command('runs').description('runs of every kind: code workflows, stored-workflow executions');
  runs
    .command('list')
    .description('runs, newest first within each kind (descending id)')
    .option('-d, --database <location>', 'SQLite file or postgres:// URL (default: $RUNLEDGER_DATABASE, $DATABASE_URL, ./runledger.db)')
    .option('--status <status>', 'pending | running | sleeping | waiting | success | failed | cancelled (several: comma-separated)')
    .option('--workflow <name>', "a workflow's name, or a stored workflow's id")
    .option('--limit <n>', 'at most this many', '20')
    .action(async (options) => {
      const limit = Number(options.limit);
      if (!Number.isInteger(limit) || limit < 1) throw new ValidationError('--limit', `must be a whole number ≥ 1 (got '${options.limit}')`);
      const status = options.status === undefined ? undefined : String(options.status).split(',').map((s) => currentStatus(s.trim()));
      const unknown = status?.find((s) => !STATUSES.has(s));
      if (unknown !== undefined) throw new ValidationError('--status', `'${unknown}' is not a run status`);
      const engine = await createEngine({ database: database(options.database), workers: false });
      try {
        let shown = 0;
        let last: string | null = null;
        do {
          const filter = (view: RunView) => (!status || status.includes(view.status)) && (options.workflow === undefined || view.workflow === options.workflow);
          const page = await listRuns(engine.store, { limit: Math.min(100, limit - shown), filter, ...(last ? { last_key: last } : {}) });
          for (const r of page.runs) print(`${r.id}  ${r.status.padEnd(9)}  ${new Date(r.createdAt).toISOString()}  ${r.workflow}${r.error ? `  ${r.error}` : ''}`);
          shown += page.count;
          last = page.last_key;
        } while (last !== null && shown < limit);
      } finally {
        await engine.close();
      }
    });
}

/**
 * Prints a run's timeline, one line per event; with `follow`, keeps printing as the run goes on
 * and returns once it has ended. Wakes on the journal's notifications; another process's writes
 * to a SQLite file send none here, so it also looks every `pollMs` (default: 500 ms on SQLite,
 * 5 s on PostgreSQL).
 *
 * @example await printTimeline(engine, 'run_01J…', { follow: true, print: console.log });
 */
export async function printTimeline(engine: Engine, runId: string, options: { follow?: boolean; print: (line: string) => void; pollMs?: number }): Promise<void> {
  const store: Store = engine.store;
  if (!(await readRunView(store, runId))) throw new NotFoundError(`run ${runId} not found`);
  const watch = options.follow ? await watchEvents(store, (s) => s === runStream(runId)) : null;
  const pollMs = options.pollMs ?? (store.dialect === 'sqlite' ? 500 : 5_000);
  try {
    const tail = runTail(store, runId, 0);
    for (;;) {
      const { events, end } = await tail.next();
      for (const event of events) options.print(timelineLine(event));
      if (end) return;
      if (events.length > 0) continue;
      if (!watch) return;
      await watch.wakeup.wait(pollMs);
    }
  } finally {
    await watch?.stop();
  }
}

/** `time  type  detail`: the detail is the event's gist (a step's name and attempt, an error), cut to 100 characters. */
export function timelineLine(event: StoredEvent): string {
  return `${new Date(event.timestamp).toISOString()}  ${event.type.padEnd(22)}  ${cut(detail(event))}`;
}

function detail(event: StoredEvent): string {
  const d = (event.data ?? {}) as Record<string, any>;
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
