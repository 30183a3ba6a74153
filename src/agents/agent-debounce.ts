import { toMs } from '../duration.js';
import type { Journal } from '../journal/journal.js';
import type { TaskQueue } from '../queue/queue.js';
import { RUN_EVENT } from '../runtime/events.js';
import { runStream } from '../runtime/pass/history.js';
import { DEBOUNCE_WINDOWS, timer, type Window } from '../runtime/start/debounce.js';
import { delayStream } from '../runtime/start/delayed.js';
import type { Store } from '../storage/store.js';
import type { AgentDebounce } from './agent-flow.js';

/**
 * An agent's per-conversation debounce, on the runtime's debounce windows: the window of (agent, conversation) is the
 * projection `debounce` of stream `debounce:agent:<agent>:<conversation>`, its timer a task of the debounce queue,
 * which every worker process runs (runtime/start/debounce.ts). The first arrival of a window starts its run with its
 * first pass parked; a later arrival within the period joins the run (its event names the run, which gathers every
 * event naming it when its turn comes) and moves the window's due; the timer closes the window at its due and moves
 * the parked pass to now. All of it in the intake's transaction, under the key's lock, so a crash loses no arrival
 * and starts the window's run once.
 */

/** What an arrival found under the key's lock. */
export interface Meeting {
  stream: string;
  /** ms, by the database's clock */
  now: number;
  /** The open window whose run has not started yet (it still takes arrivals). */
  open: Window | undefined;
}

/**
 * Locks the conversation's debounce key (the append of `debounce.started` to its stream, as a code workflow's
 * debounced start does, so the window's timer and the arrivals go one after another) and reads its window. A window
 * whose run is no longer the conversation's waiting run (it started, or ended) takes no more arrivals.
 */
export async function meetWindow(
  journal: Journal,
  tx: Store,
  p: { agent: string; conversationId: string; waiting: string | undefined },
): Promise<Meeting> {
  const stream = delayStream('debounce', `agent:${p.agent}`, p.conversationId);
  await journal.append(stream, [{ type: RUN_EVENT.debounceStarted, data: {} }], { tx });
  const now = await tx.now();
  const found = (await tx.projectionGet({ name: DEBOUNCE_WINDOWS, key: stream })) as Window | undefined;
  return { stream, now, open: found && found.runId === p.waiting ? found : undefined };
}

/** The window after this arrival: the open one with its due moved (never past `maxWait` from its first), or new. */
export function nextWindow(m: Meeting, debounce: AgentDebounce, newRun: string): Window {
  const period = toMs(debounce.period);
  const maxWait = debounce.maxWait === undefined ? Number.POSITIVE_INFINITY : toMs(debounce.maxWait);
  if (m.open) return { ...m.open, last: m.now, due: Math.min(m.now + period, m.open.first + maxWait) };
  return { runId: newRun, first: m.now, last: m.now, due: m.now + Math.min(period, maxWait), mode: 'all' };
}

/**
 * After the arrival's run is started (a new window) or joined: the window is written, the run says why it waits
 * (`debounced until <time>`), and a new window's timer is enqueued at its due (a moved due is found by the timer,
 * which enqueues itself again).
 */
export async function keepWindow(
  host: { journal: Journal; queue: TaskQueue },
  tx: Store,
  stream: string,
  window: Window,
  opened: boolean,
): Promise<void> {
  await tx.projectionPut({ name: DEBOUNCE_WINDOWS, key: stream, value: window });
  const waitingFor = `debounced until ${new Date(window.due).toISOString()}`;
  await host.journal.append(
    runStream(window.runId),
    [{ type: RUN_EVENT.runDebounced, data: { mode: 'all', until: window.due, waitingFor } }],
    { tx },
  );
  if (opened) await timer(host, tx, stream, window);
}
