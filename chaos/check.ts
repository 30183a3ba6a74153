import { allowedAfter, isSessionEventType, type SessionEventType } from '../src/agents/lifecycle.js';
import { CHANNEL_STREAM_PREFIX, MESSAGE_POSTED, REPLY_PREFIX } from '../src/chat/message.js';
import { taskTransitions } from '../src/queue/lifecycle.js';
import { RUN_EVENT_TYPES } from '../src/runtime/pass/history.js';
import { readRunView } from '../src/runtime/read/view.js';
import { openStore } from '../src/storage/open.js';
import type { Store, StoredEvent, Task, TaskState } from '../src/storage/store.js';
import { isTaskStream } from '../src/storage/tasks.js';
import { RUN_EVENT, TERMINAL_RUN_EVENTS } from '../src/runtime/events.js';
import { limitProblems } from './limits-check.js';

/** What the journal checker read and every rule it found broken (empty: the journal is sound). */
export interface CheckReport {
  events: number;
  streams: number;
  runs: number;
  tasks: number;
  problems: string[];
}

const PAGE = 5000;
const TERMINAL_EVENTS = new Set(TERMINAL_RUN_EVENTS);
/** Requests from outside a run that may still arrive after it ended (they change nothing then). */
const AFTER_THE_END = new Set<string>([RUN_EVENT.signalSent, RUN_EVENT.runCancelRequested]);
/** The view statuses each terminal event may leave (the `polish` branch renames `succeeded` → `success`). */
const TERMINAL_STATUS: Record<string, string[]> = {
  [RUN_EVENT.runCompleted]: ['succeeded', 'success'],
  [RUN_EVENT.runFailed]: ['failed'],
  [RUN_EVENT.runCancelled]: ['cancelled'],
};

/**
 * The journal checker, run over a database after every chaos scenario (all processes stopped):
 * contiguous versions per stream that agree with the streams table (a task's stream has no row
 * there); tasks move only along `src/queue/lifecycle.ts` and their last event agrees with their
 * row; a run's stream opens with one `run.started`, has at most one terminal event and nothing but
 * signals after it, and its step, sleep and wait events are consistent per call; a run's view
 * agrees with its terminal event; sessions follow `src/agents/lifecycle.ts`; a channel holds each
 * `event_id` once; no concurrency limit held by more runs at once than it allows (`limits-check.ts`).
 *
 * @example const { problems } = await checkJournal('/tmp/chaos/app.db');
 */
export async function checkJournal(location: string): Promise<CheckReport> {
  const store = await openStore(location);
  try {
    return await check(store);
  } finally {
    await store.close();
  }
}

async function check(store: Store): Promise<CheckReport> {
  const problems: string[] = [];
  const streams = new Map<string, StoredEvent[]>();
  let events = 0;
  for (let from = 1; ; ) {
    const page = await store.eventReadAll({ fromPosition: from, limit: PAGE });
    for (const event of page) {
      const list = streams.get(event.streamId);
      if (list) list.push(event);
      else streams.set(event.streamId, [event]);
    }
    events += page.length;
    if (page.length < PAGE) break;
    from = page.at(-1)!.position + 1;
  }
  await checkVersions(store, streams, problems);
  const tasks = await checkTasks(store, streams, problems);
  let runs = 0;
  for (const [streamId, list] of streams) {
    if (streamId.startsWith('run:')) {
      runs += 1;
      await checkRun(store, streamId.slice('run:'.length), list, problems);
    } else if (streamId.startsWith('session:')) checkSession(streamId, list, problems);
    else if (streamId.startsWith(CHANNEL_STREAM_PREFIX)) checkChannel(streamId, list, problems);
  }
  problems.push(...limitProblems(streams));
  return { events, streams: streams.size, runs, tasks, problems };
}

async function checkVersions(store: Store, streams: Map<string, StoredEvent[]>, problems: string[]): Promise<void> {
  for (const [streamId, list] of streams) {
    const byVersion = [...list].sort((a, b) => a.version - b.version);
    byVersion.forEach((e, i) => {
      if (e.version !== i + 1)
        problems.push(
          `${streamId}: version ${e.version} where ${i + 1} was due (versions ${byVersion.map((x) => x.version).join(',')})`,
        );
      if (i > 0 && e.position < byVersion[i - 1]!.position)
        problems.push(`${streamId}: version ${e.version} has an earlier position than version ${e.version - 1}`);
    });
  }
  const listed = new Map<string, number>();
  for (let after: string | undefined; ; ) {
    const page = await store.streamList({ prefix: '', limit: PAGE, ...(after === undefined ? {} : { after }) });
    for (const s of page) listed.set(s.streamId, s.version);
    if (page.length < PAGE) break;
    after = page.at(-1)!.streamId;
  }
  for (const [streamId, list] of streams) {
    // a task's stream has no row: its version is its newest event's (`isTaskStream`)
    if (isTaskStream(streamId)) {
      if (listed.has(streamId)) problems.push(`${streamId}: a task's stream in the streams table`);
    } else if (listed.get(streamId) !== list.length)
      problems.push(`${streamId}: holds ${list.length} events, the streams table says version ${listed.get(streamId)}`);
  }
  for (const [streamId, version] of listed)
    if (!streams.has(streamId)) problems.push(`${streamId}: in the streams table at version ${version} with no events`);
}

async function checkTasks(store: Store, streams: Map<string, StoredEvent[]>, problems: string[]): Promise<number> {
  const rows: Task[] = [];
  for (let afterId: string | undefined; ; ) {
    const page = await store.taskList({ limit: PAGE, ...(afterId === undefined ? {} : { afterId }) });
    rows.push(...page);
    if (page.length < PAGE) break;
    afterId = page.at(-1)!.id;
  }
  const ids = new Set(rows.map((t) => t.id));
  for (const streamId of streams.keys()) {
    if (streamId.startsWith('task:') && !ids.has(streamId.slice('task:'.length)))
      problems.push(`${streamId}: events of a task with no row`);
  }
  const edge = (from: TaskState | null, type: string) =>
    Object.entries(taskTransitions).find(([, t]) => t.from === from && t.event === type);
  for (const task of rows) {
    const list = streams.get(`task:${task.id}`) ?? [];
    let state: TaskState | null = null;
    // a claim is not journaled: each event that ends an attempt (from running) stands for one
    let attempts = 0;
    for (const event of list) {
      let taken = edge(state, event.type);
      if (!taken && state === 'ready' && (taken = edge('running', event.type))) attempts += 1;
      const to = (event.data as { state?: string }).state;
      if (!taken) {
        problems.push(`task:${task.id} v${event.version}: ${event.type} is not a transition from ${state ?? '(none)'}`);
        break;
      }
      if (to !== taken[1].to)
        problems.push(
          `task:${task.id} v${event.version}: ${event.type} says state ${to}, the transition leads to ${taken[1].to}`,
        );
      state = taken[1].to;
      if (taken[0] === 'redrive') attempts = 0;
    }
    // a running task's claim is in its row only
    if (task.state === 'running' && state === 'ready') {
      state = 'running';
      attempts += 1;
    }
    if (state !== task.state)
      problems.push(`task:${task.id}: its events end in ${state ?? '(none)'}, its row is ${task.state}`);
    if (attempts !== task.attempts)
      problems.push(
        `task:${task.id}: ${attempts} attempts journaled since its last redrive, its row counts ${task.attempts}`,
      );
  }
  return rows.length;
}

async function checkRun(store: Store, id: string, list: StoredEvent[], problems: string[]): Promise<void> {
  const at = (e: StoredEvent) => `run:${id} v${e.version}`;
  if (list[0]?.type !== RUN_EVENT.runStarted) problems.push(`run:${id}: opens with ${list[0]?.type}, not run.started`);
  let terminal: StoredEvent | null = null;
  const calls = new Map<number, StoredEvent[]>();
  for (const e of list) {
    if (!RUN_EVENT_TYPES.includes(e.type)) problems.push(`${at(e)}: ${e.type} is not a run event`);
    if (e.type === RUN_EVENT.runStarted && e !== list[0]) problems.push(`${at(e)}: a second run.started`);
    if (terminal && !AFTER_THE_END.has(e.type))
      problems.push(`${at(e)}: ${e.type} after ${terminal.type} (v${terminal.version})`);
    if (TERMINAL_EVENTS.has(e.type)) terminal ??= e;
    const seq = (e.data as { seq?: unknown }).seq;
    if (/^(step|sleep|wait)\./.test(e.type) && typeof seq === 'number') calls.set(seq, [...(calls.get(seq) ?? []), e]);
  }
  for (const [seq, events] of calls) problems.push(...callProblems(`run:${id} seq ${seq}`, events));
  const view = (await readRunView(store, id)) as { status: string } | undefined;
  if (!view) problems.push(`run:${id}: no view`);
  else if (terminal && !TERMINAL_STATUS[terminal.type]!.includes(view.status))
    problems.push(`run:${id}: ended with ${terminal.type}, its view says ${view.status}`);
  else if (!terminal && Object.values(TERMINAL_STATUS).flat().includes(view.status))
    problems.push(`run:${id}: view says ${view.status} with no terminal event`);
}

/** A step's events inside an attempt that do not end it: a model call's text and seam, an effect's intent. */
const WITHIN_ATTEMPT = new Set<string>([RUN_EVENT.stepText, RUN_EVENT.stepResumed, RUN_EVENT.stepIntent]);
/**
 * A step's events beside its attempts: rate limits asked and waited for before one, charged after its completion;
 * an effect's unknown outcome and its reconciliation between two.
 */
const BESIDE_ATTEMPTS = new Set<string>([
  RUN_EVENT.stepRateRequested,
  RUN_EVENT.stepRateWaiting,
  RUN_EVENT.stepRateCharged,
  RUN_EVENT.stepUnknown,
  RUN_EVENT.stepReconciled,
]);

/** The events of one `ctx` call: a step's attempts in order, each ended at most once, nothing after its end; a sleep or wait begun once and ended at most once. */
export function callProblems(where: string, events: StoredEvent[]): string[] {
  const problems: string[] = [];
  const kind = events[0]!.type.split('.')[0];
  if (events.some((e) => e.type.split('.')[0] !== kind))
    return [`${where}: mixes ${[...new Set(events.map((e) => e.type))].join(', ')}`];
  if (kind === 'step') {
    let attempt = 0;
    let open = false;
    let ended: string | null = null;
    for (const e of events) {
      const data = e.data as { attempt?: number; retryAt?: number | null };
      if (BESIDE_ATTEMPTS.has(e.type)) continue;
      if (ended) problems.push(`${where} v${e.version}: ${e.type} after the step ${ended}`);
      if (WITHIN_ATTEMPT.has(e.type)) {
        if (!open || data.attempt !== attempt)
          problems.push(`${where} v${e.version}: ${e.type} of attempt ${data.attempt} outside it (attempt ${attempt})`);
      } else if (e.type === RUN_EVENT.stepStarted) {
        if (data.attempt !== attempt + 1)
          problems.push(`${where} v${e.version}: attempt ${data.attempt} started after attempt ${attempt}`);
        attempt = data.attempt ?? attempt + 1;
        open = true;
      } else {
        if (!open || data.attempt !== attempt)
          problems.push(
            `${where} v${e.version}: ${e.type} of attempt ${data.attempt} while attempt ${attempt} is ${open ? 'running' : 'not running'}`,
          );
        open = false;
        if (e.type === RUN_EVENT.stepCompleted) ended = 'completed';
        if (e.type === RUN_EVENT.stepFailed && data.retryAt === null) ended = 'failed for good';
      }
    }
    return problems;
  }
  const [first, ...rest] = events;
  if (first!.type !== `${kind}.started`) problems.push(`${where}: opens with ${first!.type}`);
  if (rest.length > 1 || rest.some((e) => e.type === `${kind}.started`))
    problems.push(`${where}: ${events.map((e) => e.type).join(', ')}`);
  return problems;
}

function checkSession(streamId: string, list: StoredEvent[], problems: string[]): void {
  let last: SessionEventType | null = null;
  for (const e of list) {
    if (!isSessionEventType(e.type) || !allowedAfter(last, e.type)) {
      problems.push(`${streamId} v${e.version}: ${e.type} after ${last ?? '(nothing)'}`);
      return;
    }
    last = e.type;
  }
}

function checkChannel(streamId: string, list: StoredEvent[], problems: string[]): void {
  const seen = new Map<string, number>();
  const replies = new Map<string, number>();
  for (const e of list) {
    if (e.type !== MESSAGE_POSTED) problems.push(`${streamId} v${e.version}: ${e.type} in a channel`);
    const data = e.data as { event_id: string; metadata?: { reply_to?: string } };
    if (seen.has(data.event_id))
      problems.push(
        `${streamId} v${e.version}: event_id ${data.event_id} again (first at v${seen.get(data.event_id)})`,
      );
    seen.set(data.event_id, e.version);
    const replyTo = data.event_id.startsWith(REPLY_PREFIX) ? data.metadata?.reply_to : undefined;
    if (replyTo !== undefined) replies.set(replyTo, (replies.get(replyTo) ?? 0) + 1);
  }
  for (const [messageId, count] of replies)
    if (count > 1) problems.push(`${streamId}: ${count} replies to message ${messageId}`);
}
