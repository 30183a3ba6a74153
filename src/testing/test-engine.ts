import { resolveConfig, type RunledgerOptions } from '../config.js';
import { toMs, type Duration } from '../duration.js';
import { Engine, engineStore } from '../engine.js';
import { ValidationError } from '../errors.js';
import type { TaskHandler, WorkOptions } from '../queue/handler.js';
import type { Worker } from '../queue/worker.js';
import type { RunView } from '../runtime/read/view.js';
import type { StartInput } from '../runtime/flow.js';
import { RUN_QUEUE, type RunHandle, type StartOptions } from '../runtime/runtime.js';
import { BATCH_QUEUE } from '../runtime/start/batch.js';
import { DEBOUNCE_QUEUE } from '../runtime/start/debounce.js';
import type { Workflow } from '../runtime/workflow.js';
import { openSqliteStore } from '../storage/sqlite/store.js';
import type { Schedules } from '../triggers/schedules.js';
import { TestClock } from './clock.js';
import { testSchedules, type Firing } from './schedules.js';

export interface TestEngineOptions extends Omit<RunledgerOptions, 'database'> {
  /** The workflows its run workers run. */
  workflows?: Workflow[];
  /** Where the clock starts: a date, or ms since the epoch. Default: the time the engine is created. */
  now?: Date | number;
  /** How long (real time) `advance` and `idle` wait for the engine to be idle before they throw. Default 10 s. */
  idleTimeoutMs?: number;
}

/**
 * An engine on an in-memory SQLite database whose clock stands still until the test moves it
 * (`advance`), so a workflow with a month of sleeps is tested in milliseconds. Its runs, steps and
 * tasks run as they do in production; only the time is the test's.
 *
 * @example
 * const t = await createTestEngine({ workflows: [trial] });
 * const run = await t.start(trial, { user: 'ada' });
 * await t.advance('14d'); // the 14-day sleep is over: the reminder step ran
 * expect((await t.run(run.id)).steps.map((s) => s.name)).toContain('remind');
 * await t.close();
 */
export async function createTestEngine(options: TestEngineOptions = {}): Promise<TestEngine> {
  const { workflows, now, idleTimeoutMs = 10_000, ...rest } = options;
  const start = now === undefined ? Date.now() : now instanceof Date ? now.getTime() : now;
  if (!Number.isFinite(start)) throw new ValidationError('now', `must be a valid date or ms timestamp (got ${now})`);
  if (!Number.isInteger(idleTimeoutMs) || idleTimeoutMs < 1)
    throw new ValidationError('idleTimeoutMs', `must be a whole number ≥ 1 (got ${idleTimeoutMs})`);
  const config = resolveConfig({ ...rest, database: ':memory:' });
  const clock = new TestClock(start);
  const engine = new Engine(config, openSqliteStore(config.database, { clock }), workflows);
  // as createEngine does: the process row exists before its workers claim anything
  await engine.liveness.start();
  return new TestEngine(engine, clock, idleTimeoutMs, testSchedules(engine));
}

/** What `createTestEngine` returns: the engine (`engine`), its clock (`now`, `advance`) and the usual calls. */
export class TestEngine {
  /** The queues this engine works: the engine's own, and those of `work`. */
  private readonly queues = new Set([RUN_QUEUE, DEBOUNCE_QUEUE, BATCH_QUEUE]);
  private advancing = false;
  /**
   * Cron schedules, as `POST /schedules` makes them (`create`, `update`, `setPaused`, `delete`, `get`, `backfill`):
   * `advance` fires each slot that comes due, at its own time, through the server's scheduler.
   *
   * @example await t.schedules.create({ cron: '0 9 * * *', target: { workflow: 'report' } }); await t.advance('1d');
   */
  readonly schedules: Schedules;
  private readonly fireSchedules: () => Promise<Firing>;

  constructor(
    /** The engine under test, for everything this class does not repeat (`queue`, `runs`, `operator` …). */
    readonly engine: Engine,
    private readonly clock: TestClock,
    private readonly idleTimeoutMs: number,
    triggers: { schedules: Schedules; fire: () => Promise<Firing> },
  ) {
    this.schedules = triggers.schedules;
    this.fireSchedules = triggers.fire;
  }

  /** The test clock: ms since the epoch. It moves only in `advance`. */
  now(): number {
    return this.clock.now();
  }

  /** Starts a run of `workflow` (see `Engine.start`). */
  start<I, O>(workflow: Workflow<I, O>, input: StartInput<I>, options?: StartOptions): Promise<RunHandle<O>> {
    return this.engine.start(workflow, input, options);
  }

  /** A run's status and steps (see `Engine.run`). */
  run(runId: string): Promise<RunView> {
    return this.engine.run(runId);
  }

  /** Sends a signal to a run's `waitForEvent(name)` (see `Engine.signal`). */
  signal(runId: string, name: string, payload: unknown): Promise<{ duplicate: boolean }> {
    return this.engine.signal(runId, name, payload);
  }

  /** Starts a worker for `queue` (see `Engine.work`); `advance` and `idle` wait for its tasks too. */
  work(queue: string, handler: TaskHandler, options?: WorkOptions): Worker {
    this.queues.add(queue);
    return this.engine.work(queue, handler, options);
  }

  /**
   * Moves the clock `duration` ahead and resolves once the engine is idle there. It first waits
   * for what is running (a step's lease is never outrun by the clock), then moves from one due
   * time to the next: every sleep, timeout, retry and task that comes due meanwhile runs, and
   * every schedule's slot fires, at its own time, in order, as it would have in real time.
   *
   * @example await t.advance('30d');
   */
  async advance(duration: Duration): Promise<void> {
    const ms = toMs(duration, 'duration');
    if (this.advancing) throw new Error('advance is already under way: await it before the next');
    this.advancing = true;
    try {
      const until = this.clock.now() + ms;
      let next = await this.idle();
      while (next !== null && next <= until) {
        this.clock.set(next);
        next = await this.idle();
      }
      this.clock.set(until);
      await this.idle();
    } finally {
      this.advancing = false;
    }
  }

  /**
   * Fires the schedules' slots due now, then waits, the clock standing still, until the engine is
   * idle: no task running and none due on the queues it works (a paused queue's or workflow's tasks
   * are not due). Resolves with when the next task or slot comes due (ms since the epoch), or null
   * when none is scheduled.
   *
   * @example await t.start(onboard, { user: 'ada' }); await t.idle(); // its first steps ran
   */
  async idle(): Promise<number | null> {
    const deadline = performance.now() + this.idleTimeoutMs;
    // a slot's run is a task like any other: fired first, it is waited for below
    await this.fireSchedules();
    for (;;) {
      const state = await this.look();
      if ('next' in state) {
        // a run may have created, edited or resumed a schedule: its slots begin after now, so this fires
        // nothing and learns when its next one comes (should it fire, the runs it started are waited for)
        const firing = await this.fireSchedules();
        if (firing.slots === 0) return earliest(state.next, firing.next);
        continue;
      }
      if (performance.now() > deadline)
        throw new Error(
          `the engine is not idle after ${this.idleTimeoutMs} ms: ${state.busy} (a step waiting for the test?)`,
        );
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  /** Stops the engine and drops its database. */
  close(): Promise<void> {
    return this.engine.close();
  }

  /** What keeps the engine busy, or when its next task comes due. */
  private async look(): Promise<{ busy: string } | { next: number | null }> {
    const store = engineStore(this.engine);
    const now = this.clock.now();
    let next: number | null = null;
    for (const q of await store.taskStats()) {
      if (!this.queues.has(q.queue)) continue;
      if (q.running > 0) return { busy: `${q.running} task(s) running on queue '${q.queue}'` };
      if (q.ready === 0) continue;
      // every ready task, from the epoch on: due ones too (≤ 0), paused ones not
      const dueIn = await store.taskDueIn({ queue: q.queue, lookbackMs: now });
      if (dueIn === null) continue;
      if (dueIn <= 0) return { busy: `a task due on queue '${q.queue}'` };
      next = Math.min(next ?? Number.POSITIVE_INFINITY, now + dueIn);
    }
    return { next };
  }
}

function earliest(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}
