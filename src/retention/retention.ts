import type { Journal } from '../journal/journal.js';
import type { EngineEvents } from '../observe/events.js';
import { RUN_QUEUE, type Runtime } from '../runtime/runtime.js';
import { runStream } from '../runtime/pass/history.js';
import { isTerminal, pageKeys, RUN_STEPS, RUN_VIEW, type RunView } from '../runtime/read/view.js';
import { taskStream } from '../queue/lifecycle.js';
import type { Store } from '../storage/store.js';
import { keysKind } from './keys.js';
import { auditKind } from './audit.js';
import type { RetentionPolicy } from './policy.js';
import { TERMINAL_RUN_EVENTS } from '../runtime/events.js';

/** What one sweep of one kind deleted (or would delete, in a dry run). */
export interface Pruned {
  kind: string;
  runs: number;
  events: number;
  tasks: number;
  /** Other rows (inbound events, index rows) a kind counts on its own. */
  other: number;
}

export interface SweepOptions {
  /** Records that finished before this (ms, database clock) go. */
  before: number;
  /** The database clock when the sweep began (ms). */
  now: number;
  /** Records per transaction: small, so writers wait at most one short transaction. */
  batchSize: number;
  /** Pause between batches, for the writers. */
  pauseMs: number;
  /** Count, then roll back: nothing is deleted. */
  dryRun: boolean;
  signal?: AbortSignal;
  /** Where a sweep reads events, with the `store` it was given as `tx` (a dry run's rolled-back transaction). */
  journal: Journal;
}

/** One kind of record retention deletes: a sweep runs batches until nothing is left before `before`. */
export interface RetentionKind {
  name: string;
  sweep(store: Store, options: SweepOptions): Promise<Pruned>;
}

/** Deletes the rows a feature keeps for a run (an execution's index row), in the transaction that deletes the run; may say how many events and other rows went. */
// biome-ignore lint/suspicious/noConfusingVoidType: a hook that counts nothing returns nothing (Promise<void>)
export type RunPruneHook = (tx: Store, run: RunView) => Promise<{ events?: number; other?: number } | void>;

/**
 * A feature's own ages for some of its runs (a stored workflow's `ttl`), overriding the policy's
 * `runs` age for them in both directions: the `runs` sweep keeps such a run until it is past its own
 * age, and deletes the ones `expired` names though the policy would keep them longer.
 */
export interface RunAges {
  /** The run's own age in ms, or undefined: the policy's. */
  ageOf(tx: Store, run: RunView): Promise<number | undefined>;
  /** Ids of runs that may have ended more than their own age before `now`; the sweep checks each with `ageOf` again. */
  expired(tx: Store, now: number): Promise<string[]>;
}

const TERMINAL_EVENTS = [...TERMINAL_RUN_EVENTS];
/** Marks a rollback of a dry run's transaction. */
class DryRun extends Error {}

/**
 * Deletes finished records older than a policy's ages, in small batches that never hold a writer
 * up for long. A run goes whole (its stream, view, tasks and their streams, the rows features keep
 * for it) or not at all, and only when it has ended, has no pass waiting to run, and no parent
 * that is still live. Every sweep that deleted something is recorded as a `retention.pruned`
 * event in the stream `retention`. Deleting is the one exception to "events are never deleted".
 *
 * @example
 * const retention = new Retention(store, journal, runtime, events);
 * await retention.prune({ runs: 30 * 86_400_000 }, { dryRun: true });
 */
export class Retention {
  private readonly kinds = new Map<string, RetentionKind>();
  private readonly hooks: RunPruneHook[] = [];
  private readonly ages: RunAges[] = [];
  private timer: { stop(): Promise<void> } | null = null;

  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    runtime: Runtime,
    /** Where sweeps are reported (`retention:pruned`) and a failed background sweep (`engine:error`). */
    private readonly events: EngineEvents,
  ) {
    this.register(runsKind(this.hooks, this.ages));
    this.register(tasksKind());
    this.register(keysKind());
    this.register(auditKind());
    // a run's chunks of big values and its version and generation rows go with it
    this.onRunPruned((tx, run) => runtime.forget(tx, run.id));
  }

  /** Adds a kind (a feature's own records). */
  register(kind: RetentionKind): void {
    this.kinds.set(kind.name, kind);
  }

  /** Runs `hook` for each run deleted, in its transaction. */
  onRunPruned(hook: RunPruneHook): void {
    this.hooks.push(hook);
  }

  /** Gives some runs their own age (see RunAges); applied by every `runs` sweep. */
  withRunAges(ages: RunAges): void {
    this.ages.push(ages);
  }

  get kindNames(): string[] {
    return [...this.kinds.keys()];
  }

  /** One sweep of every kind the policy names; returns what each deleted. */
  async prune(
    policy: RetentionPolicy,
    options: { dryRun?: boolean; batchSize?: number; pauseMs?: number; signal?: AbortSignal } = {},
  ): Promise<Pruned[]> {
    const { store, journal, events } = this;
    const now = await store.now();
    const dryRun = options.dryRun ?? false;
    const out: Pruned[] = [];
    for (const [name, age] of Object.entries(policy)) {
      const kind = this.kinds.get(name);
      if (!kind) throw new Error(`retention: no kind '${name}' (kinds: ${this.kindNames.join(', ')})`);
      const sweep = (s: Store) =>
        kind.sweep(s, {
          journal: this.journal,
          before: now - age,
          now,
          batchSize: options.batchSize ?? 200,
          pauseMs: options.pauseMs ?? 20,
          dryRun,
          ...(options.signal ? { signal: options.signal } : {}),
        });
      // a dry run deletes in one transaction that is then rolled back, so each batch sees the ones before it gone
      const pruned = dryRun ? await rollback(store, sweep) : await sweep(store);
      out.push(pruned);
      if (!dryRun && pruned.runs + pruned.events + pruned.tasks + pruned.other > 0)
        await store.storageVacuum({ after: 'sweep' });
      events.emit('retention:pruned', {
        kind: name,
        runs: pruned.runs,
        events: pruned.events,
        tasks: pruned.tasks,
        dryRun,
      });
      if (!dryRun && pruned.runs + pruned.events + pruned.tasks + pruned.other > 0) {
        await journal.append('retention', [
          { type: 'retention.pruned', data: { ...pruned, olderThanMs: age, before: now - age } },
        ]);
      }
    }
    return out;
  }

  /**
   * Prunes by `policy` every `intervalMs` in the background until `stop()`. A sweep that fails
   * (the database went away) is reported as `engine:error` and tried again next time.
   */
  start(policy: RetentionPolicy, options: { intervalMs?: number; batchSize?: number; pauseMs?: number } = {}): void {
    if (this.timer || Object.keys(policy).length === 0) return;
    const controller = new AbortController();
    let wake: () => void = () => {};
    const loop = (async () => {
      while (!controller.signal.aborted) {
        try {
          await this.prune(policy, { ...options, signal: controller.signal });
        } catch (error) {
          if (!controller.signal.aborted) this.events.emit('engine:error', { what: 'retention', error });
        }
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, options.intervalMs ?? 60_000);
          wake = () => (clearTimeout(t), resolve());
        });
      }
    })();
    this.timer = {
      stop: async () => {
        controller.abort();
        wake();
        await loop;
      },
    };
  }

  async stop(): Promise<void> {
    await this.timer?.stop();
    this.timer = null;
  }
}

async function rollback<T>(store: Store, fn: (tx: Store) => Promise<T>): Promise<T> {
  let result!: T;
  try {
    await store.transaction(async (tx) => {
      result = await fn(tx);
      throw new DryRun();
    });
  } catch (error) {
    if (!(error instanceof DryRun)) throw error;
  }
  return result;
}

const pause = (options: SweepOptions) =>
  options.dryRun || options.pauseMs <= 0
    ? Promise.resolve()
    : new Promise((resolve) => setTimeout(resolve, options.pauseMs));

/**
 * Finished runs, found by their terminal event in position order (an index serves it). Positions
 * follow time closely enough: the sweep stops at the first terminal event not old enough, and a
 * run it passes over (still referenced) is looked at again by the next sweep.
 */
function runsKind(hooks: RunPruneHook[], ages: RunAges[]): RetentionKind {
  /** True when the run has an age of its own and is younger than it (or, `own`, has none: not this pass's). */
  const keep = async (tx: Store, run: RunView, options: SweepOptions, own: boolean): Promise<boolean> => {
    for (const source of ages) {
      const age = await source.ageOf(tx, run);
      if (age !== undefined) return run.updatedAt >= options.now - age;
    }
    return own;
  };
  return {
    name: 'runs',
    async sweep(store, options) {
      const total: Pruned = { kind: 'runs', runs: 0, events: 0, tasks: 0, other: 0 };
      const add = (batch: Omit<Pruned, 'kind'>) => {
        total.runs += batch.runs;
        total.events += batch.events;
        total.tasks += batch.tasks;
        total.other += batch.other;
      };
      // runs past an age of their own that is shorter than the policy's: the terminal-event scan below stops before them
      for (const source of ages) {
        const ids = await source.expired(store, options.now);
        for (let i = 0; i < ids.length && !options.signal?.aborted; i += options.batchSize) {
          add(
            await store.transaction((tx) =>
              deleteRuns(tx, options.journal, ids.slice(i, i + options.batchSize), hooks, (t, run) =>
                keep(t, run, options, true),
              ),
            ),
          );
          if (!options.dryRun) await store.storageVacuum({ after: 'batch' });
          await pause(options);
        }
      }
      let from = 1;
      for (;;) {
        if (options.signal?.aborted) break;
        const ends = await options.journal.readAll({
          types: TERMINAL_EVENTS,
          fromPosition: from,
          limit: options.batchSize,
          tx: store,
        });
        const old = ends.filter((e) => e.timestamp < options.before && e.streamId.startsWith('run:'));
        if (old.length > 0) {
          const ids = old.map((e) => e.streamId.slice('run:'.length));
          add(
            await store.transaction((tx) =>
              deleteRuns(tx, options.journal, ids, hooks, (t, run) => keep(t, run, options, false)),
            ),
          );
          if (!options.dryRun) await store.storageVacuum({ after: 'batch' });
        }
        if (ends.length < options.batchSize || ends.some((e) => e.timestamp >= options.before)) break;
        from = ends.at(-1)!.position + 1;
        await pause(options);
      }
      return total;
    },
  };
}

async function deleteRuns(
  tx: Store,
  journal: Journal,
  ids: string[],
  hooks: RunPruneHook[],
  keep: (tx: Store, run: RunView) => Promise<boolean>,
): Promise<Omit<Pruned, 'kind'>> {
  const candidates: RunView[] = [];
  for (const id of ids) {
    const view = (await tx.projectionGet({ name: RUN_VIEW, key: id })) as RunView | undefined;
    if (!view || !isTerminal(view.status) || (await keep(tx, view))) continue;
    const [started] = await journal.readStream(runStream(id), { limit: 1, tx });
    const parent = (started?.data as { parent?: { runId: string } | null } | undefined)?.parent;
    if (parent) {
      // a parent that is still live reads its child's view when it resumes
      const parentView = (await tx.projectionGet({ name: RUN_VIEW, key: parent.runId })) as RunView | undefined;
      if (parentView && !isTerminal(parentView.status)) continue;
    }
    candidates.push(view);
  }
  // a pass still waiting to run (a signal that woke an ended run) keeps it until that pass is done
  const busy = new Set(await tx.taskListActiveKeys({ queue: RUN_QUEUE, orderingKeys: candidates.map((v) => v.id) }));
  const runs = candidates.filter((v) => !busy.has(v.id));
  if (runs.length === 0) return { runs: 0, events: 0, tasks: 0, other: 0 };
  const tasks: string[] = [];
  for (;;) {
    const page = await tx.taskDelete({
      states: ['completed', 'dead'],
      updatedBefore: Number.MAX_SAFE_INTEGER,
      limit: 1000,
      queue: RUN_QUEUE,
      orderingKeys: runs.map((v) => v.id),
    });
    tasks.push(...page);
    if (page.length < 1000) break;
  }
  let { events } = await tx.streamDelete({
    streamIds: [...runs.map((v) => runStream(v.id)), ...tasks.map(taskStream)],
  });
  let other = 0;
  for (const run of runs) {
    await tx.projectionDelete({ name: RUN_VIEW, key: run.id });
    for (const key of pageKeys(run.id, run.stepPages ?? 0)) await tx.projectionDelete({ name: RUN_STEPS, key });
    for (const hook of hooks) {
      const gone = await hook(tx, run);
      events += gone?.events ?? 0;
      other += gone?.other ?? 0;
    }
  }
  return { runs: runs.length, events, tasks: tasks.length, other };
}

/** Finished tasks of every queue and their streams. Passes of runs are left to `runs`, except completed ones: nothing reads those. */
function tasksKind(): RetentionKind {
  return {
    name: 'tasks',
    async sweep(store, options) {
      const total: Pruned = { kind: 'tasks', runs: 0, events: 0, tasks: 0, other: 0 };
      const selections = [
        { states: ['completed', 'dead'] as const, exceptQueue: RUN_QUEUE },
        { states: ['completed'] as const, queue: RUN_QUEUE },
      ];
      for (const selection of selections) {
        for (;;) {
          if (options.signal?.aborted) return total;
          const batch = await store.transaction(async (tx) => {
            const ids = await tx.taskDelete({
              ...selection,
              states: [...selection.states],
              updatedBefore: options.before,
              limit: options.batchSize,
            });
            const { events } = await tx.streamDelete({ streamIds: ids.map(taskStream) });
            return { tasks: ids.length, events };
          });
          total.tasks += batch.tasks;
          total.events += batch.events;
          if (!options.dryRun && batch.tasks > 0) await store.storageVacuum({ after: 'batch' });
          if (batch.tasks < options.batchSize) break;
          await pause(options);
        }
      }
      return total;
    },
  };
}
