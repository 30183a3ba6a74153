import type { StoredEvent } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import type { RunFlow } from '../start/run-flow.js';

/** The stream of one run. */
export function runStream(runId: string): string {
  return `run:${runId}`;
}

export { RUN_EVENT_TYPES } from '../events.js';

export type EntryKind = 'step' | 'sleep' | 'wait' | 'value' | 'child' | 'poll' | 'state' | 'node';

/**
 * The position of a `ctx` call: 1, 2, 3 … in the workflow's call order, or `<seq>.<branch>.<n>`
 * for the n-th call of a branch of `ctx.parallel` (numbered on its own, so the order in which
 * branches happen to interleave never changes a call's position).
 */
export type Seq = number | string;

const KINDS = new Set<string>(['step', 'sleep', 'wait', 'value', 'child', 'poll', 'state', 'node']);

/** What the journal holds for one `ctx` call, by its position in the workflow's call order. */
export interface Entry {
  kind: EntryKind;
  name: string;
  events: StoredEvent[];
}

export interface SentSignal {
  version: number;
  name: string;
  payload: unknown;
}

/**
 * A run's journal, read once at the start of a pass: what each `ctx` call did, the signals sent
 * and consumed, the compensations done, and how the run ended, if it did.
 */
export class History {
  readonly entries = new Map<Seq, Entry>();
  readonly signals: SentSignal[] = [];
  readonly consumed = new Set<number>();
  readonly compensated = new Set<Seq>();
  /** The calls whose compensation the journal records as failed (its tries used up): not tried again. */
  readonly compensationFailed = new Set<Seq>();
  /** The confirmation of each poll's cancel under way: its `compensation.confirming` and `.polled` events, by the poll's seq. */
  readonly confirming = new Map<Seq, StoredEvent[]>();
  workflow = '';
  /** The code version the run started on; null for runs started before versions were recorded. */
  codeVersion: string | null = null;
  input: unknown = null;
  /** ms; the run fails with a TimeoutError when it has not ended by then */
  deadline: number | null = null;
  orderingKey: string | null = null;
  /** The run's flow options as its start checked them (`run.started`'s `flow`), its limits' keys resolved; null: none. */
  flow: RunFlow | null = null;
  /** The second name a workflow pause holds the run by (`run.started`'s `pauseKey`); null: none. */
  pauseKey: string | null = null;
  parent: { runId: string; seq: Seq } | null = null;
  cancelRequested = false;
  /** Who asked first to cancel the run (`by` of its first `run.cancel_requested`): the engine (`system`) or a user. */
  cancelledBy: 'user' | 'system' | null = null;
  terminal: StoredEvent | null = null;
  version = 0;
  /** Bytes of big values (blobs) these events hold whole: the replay cache weighs a history by it. */
  blobBytes = 0;
  /** The event that started the run, or its current generation (`run.continued`). */
  started: StoredEvent | null = null;
  /** The generation (0, 1, 2 … one per `continueAsNew`) these events are of. */
  generation = 0;
  /** Each `ctx.patched(id)` decision of the run: true, it took the new branch. */
  readonly patches = new Map<string, boolean>();
  /** The highest position of the run's own order the journal holds a call at: where the run got to. */
  reached = 0;

  constructor(events: StoredEvent[]) {
    for (const event of events) this.add(event);
  }

  add(event: StoredEvent): void {
    this.version = event.version;
    const data = event.data as Record<string, any>;
    const [kind] = event.type.split('.') as [string];
    switch (event.type) {
      // biome-ignore lint/suspicious/noFallthroughSwitchClause: run.continued carries what run.started does (below)
      case RUN_EVENT.runContinued:
        // a new generation: only its own events count (the stream is read from here on)
        this.entries.clear();
        this.signals.length = 0;
        this.consumed.clear();
        this.compensated.clear();
        this.compensationFailed.clear();
        this.confirming.clear();
        this.patches.clear();
        this.reached = 0;
        this.cancelRequested = false;
        this.cancelledBy = null;
        this.generation = data.generation;
        this.started = event;
      // falls through: it carries what run.started does
      case RUN_EVENT.runStarted:
        this.started = event;
        this.workflow = data.workflow;
        this.codeVersion = data.version ?? null;
        this.input = data.input;
        this.deadline = data.deadline ?? null;
        this.orderingKey = data.orderingKey ?? null;
        this.flow = data.flow ?? null;
        this.pauseKey = data.pauseKey ?? null;
        this.parent = data.parent ?? null;
        return;
      case RUN_EVENT.runBatched:
        // a later input of the run's batch joins the list: the input's, or its field `into` (a stored execution's)
        if ('input' in data) this.input = joined(this.input, data);
        return;
      case RUN_EVENT.runDebounced:
        // a later start of the run's debounce window: its input replaces the run's (last) or joins the list (all)
        if ('input' in data) this.input = data.mode === 'all' ? [...(this.input as unknown[]), data.input] : data.input;
        return;
      case RUN_EVENT.signalSent:
        this.signals.push({ version: event.version, name: data.name, payload: data.payload });
        return;
      case RUN_EVENT.runCancelRequested:
        this.cancelRequested = true;
        this.cancelledBy ??= data.by === 'system' ? 'system' : 'user';
        return;
      case RUN_EVENT.runCompleted:
      case RUN_EVENT.runFailed:
      case RUN_EVENT.runCancelled:
        this.terminal = event;
        return;
      case RUN_EVENT.compensationCompleted:
        this.compensated.add(data.seq);
        return;
      case RUN_EVENT.compensationFailed:
        this.compensationFailed.add(data.seq);
        return;
      case RUN_EVENT.compensationConfirming:
      case RUN_EVENT.compensationPolled:
        this.confirming.set(data.seq, [...(this.confirming.get(data.seq) ?? []), event]);
        return;
      case RUN_EVENT.patchRecorded:
        this.patches.set(data.id, data.patched);
        return;
    }
    if (KINDS.has(kind)) {
      const entry: Entry = this.entries.get(data.seq) ?? { kind: kind as EntryKind, name: data.name, events: [] };
      entry.events.push(event);
      this.entries.set(data.seq, entry);
      this.reached = Math.max(this.reached, Number(String(data.seq).split('.')[0]));
      if (event.type === RUN_EVENT.waitCompleted) this.consumed.add(data.signal);
    }
  }

  /** The first event of `type` recorded for call `seq`. */
  find(seq: Seq, type: string): StoredEvent | undefined {
    return this.entries.get(seq)?.events.find((e) => e.type === type);
  }

  count(seq: Seq, type: string): number {
    return this.entries.get(seq)?.events.filter((e) => e.type === type).length ?? 0;
  }
}

/** The run's input with a batch's later input appended: to the list, or to its field `into`'s list. */
export function joined(input: unknown, data: { input?: unknown; into?: string }): unknown {
  if (data.into === undefined) return [...(input as unknown[]), data.input];
  const base = input as Record<string, unknown>;
  return { ...base, [data.into]: [...(base[data.into] as unknown[]), data.input] };
}
