import { defaultBackoff } from '../backoff.js';
import { CancelledError, storeUnavailable } from '../errors.js';
import { newId } from '../ids.js';
import type { Journal } from '../journal/journal.js';
import { Wakeup } from '../journal/wakeup.js';
import type { Store, Task, TaskClaim } from '../storage/store.js';
import { LazyAbort, lostReason } from './abort.js';
import { PREFETCH_HOLD_MS, prefetchFor } from './prefetch.js';
import { checkResult, type TaskContext, type TaskHandler, type WorkOptions } from './handler.js';
import { expireLeases, settleAttempt, type Outcome } from './settle.js';
import { rateGate } from './task-rate.js';

type Running = { task: Task; abort: LazyAbort };

/**
 * Claims a worker has in flight at once while claims come back full, each for up to half of what
 * it may hold: the next one commits while the last one's tasks run, so PostgreSQL's two commit
 * lanes (see GroupCommit) both work; an idle worker sends one at a time. Measured, drain of
 * 20,000 no-op tasks, concurrency 10, prefetch 160: one claim at a time 8,400/s, two 11,600/s.
 */
const CLAIMS_IN_FLIGHT = 2;

/**
 * Claims tasks of one queue and runs them, `concurrency` at a time. Claims are leased (database
 * clock) and renewed by heartbeat; a completion or failure carrying a lost lease is rejected by
 * the store, so a worker that stalled past its lease can never finish a task someone else holds.
 * Completions are committed in groups (the journal's `GroupCommit`): one transaction for all
 * handlers of the process that finished meanwhile, together with the run writes of their passes.
 */
export class Worker {
  readonly id: string;
  private readonly options: Required<
    Omit<WorkOptions, 'onError' | 'onSettled' | 'workerId' | 'events' | 'tags' | 'batch' | 'charge'>
  > &
    WorkOptions;
  private readonly wakeup = new Wakeup();
  private readonly running = new Map<string, Running>();
  /** Claimed, not started yet (prefetched), oldest first, with when each was claimed (performance.now()). */
  private readonly held: Array<{ task: Task; at: number }> = [];
  /** Handler duration (ms), a moving average: prefetching only pays while handlers are short. */
  private handlerMs = 0;
  /** Set when held tasks went stale (given back): no prefetching again until a handler finishes. */
  private slotsStuck = false;
  private active = false;
  private loop: Promise<void> | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private expiryTimer: NodeJS.Timeout | null = null;
  /** Tasks whose handler is done and whose outcome is being committed (heartbeats still renew their leases). */
  private readonly settling = new Map<string, Task>();
  /** Claims in flight (see CLAIMS_IN_FLIGHT), and how many tasks they ask for in all. */
  private readonly claims: Array<Promise<boolean>> = [];
  private asked = 0;
  /** Slots kept for tasks being enqueued here (`reserve`), until adopted or forgone. */
  private reserved = 0;
  /** The last claim came back full: more may be ready, so a second claim may go out while it commits. */
  private backlog = false;
  /** When the last short claim was sent: a task due since then counts for `taskDueIn` (it may not have seen it due). */
  private shortClaimAt = 0;
  /**
   * A task may be claimable that no claim has looked for: set by a wake-up of the queue, a wait
   * that ran out, a failed attempt; cleared by a short claim sent after the last wake-up. A slot
   * freeing alone sends no claim: that task's completion wakes the queue if its key's next waits.
   */
  private look = true;
  /** Wake-ups of the queue so far: a short claim clears `look` only if none came while it was out. */
  private wakes = 0;
  /** When `look` is set again with no wake-up: the next scheduled task is due, or the poll (performance.now()). */
  private due = 0;
  /** What `settleAttempt` needs of this worker (made once: it is passed per task). */
  private readonly settleWith: Parameters<typeof settleAttempt>[5];

  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    readonly queue: string,
    private readonly handler: TaskHandler,
    options: WorkOptions,
  ) {
    this.options = {
      concurrency: 10,
      leaseMs: 30_000,
      backoff: defaultBackoff,
      pollMs: 1000,
      maxResultBytes: 1 << 20,
      prefetch: 16 * (options.concurrency ?? 10),
      ...options,
    };
    this.id = options.workerId ?? newId('worker');
    this.settleWith = { ...this.options, active: () => this.active };
  }

  start(): void {
    if (this.active) return;
    this.active = true;
    this.loop = this.run().catch((error) => this.options.onError?.(error));
    this.heartbeatTimer = setInterval(() => this.renew(), this.options.leaseMs / 3);
    // off the claim path, so a wake-up never waits for the sweep
    const sweep = Math.min(this.options.pollMs, this.options.leaseMs / 2);
    this.expiryTimer = setInterval(() => void this.expireLeases().catch((e) => this.options.onError?.(e)), sweep);
    // at once too: leases a dead process held may have just been ended (see Liveness)
    void this.expireLeases().catch((e) => this.options.onError?.(e));
  }

  /**
   * A claim for a task this process is about to enqueue (`TaskClaim`), when this worker is idle: a
   * slot free, nothing held or backed up, the task's tag one it has. The slot is kept for it until
   * `adopt` or `forgo`.
   */
  reserve(tag: string | null): TaskClaim | null {
    if (
      !this.active ||
      this.backlog ||
      this.held.length > 0 ||
      this.running.size + this.asked + this.reserved >= this.options.concurrency
    )
      return null;
    if (tag !== null && this.options.tags && !this.options.tags().includes(tag)) return null;
    this.reserved += 1;
    return { workerId: this.id, leaseToken: newId('lease'), leaseMs: this.options.leaseMs };
  }

  /** Runs `task`, enqueued with this worker's `reserve`d claim, if the store claimed it (it was not paused). */
  adopt(task: Task, claim: TaskClaim): void {
    if (task.state !== 'running' || task.leaseToken !== claim.leaseToken) {
      this.forgo();
      return;
    }
    this.reserved -= 1;
    this.options.events?.emit('task:claim', {
      queue: this.queue,
      taskId: task.id,
      attempt: task.attempts,
      workerId: this.id,
    });
    // first: its slot was kept for it (see `startHeld`), so it starts now, whatever was claimed meanwhile
    this.held.unshift({ task, at: performance.now() });
    if (this.active) this.startHeld();
    // stopping: stop() gives back what is held, unless it already did
    else void this.release(this.held.splice(0)).catch((error) => this.options.onError?.(error));
  }

  /** Frees a `reserve`d slot that took no task. */
  forgo(): void {
    this.reserved -= 1;
    this.lookAgain();
  }

  /** Something may be claimable: the loop claims at its next turn. */
  private lookAgain(): void {
    this.look = true;
    this.wakeup.wake();
  }

  /** Renews its leases now (`heartbeat`): a task of its cancelled meanwhile has its handler aborted. */
  renew(): void {
    void this.heartbeat().catch((error) => this.options.onError?.(error));
  }

  /** Stops claiming, gives back the tasks it holds but has not started, lets running tasks finish and commits them. */
  async stop(): Promise<void> {
    this.active = false;
    this.wakeup.wake();
    await this.loop;
    await this.release(this.held.splice(0)).catch((error) => this.options.onError?.(error));
    while (this.running.size > 0 || this.settling.size > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (this.expiryTimer) clearInterval(this.expiryTimer);
  }

  private async run(): Promise<void> {
    const unlisten = await this.store.listen('tasks', (queue) => {
      if (queue !== '' && queue !== this.queue) return;
      this.wakes += 1;
      this.lookAgain();
    });
    try {
      while (this.active) {
        this.startHeld();
        const prefetch = this.slotsStuck
          ? 0
          : prefetchFor(this.options.concurrency, this.options.prefetch, this.handlerMs);
        const most = this.options.concurrency + prefetch;
        const want = most - this.running.size - this.held.length - this.asked - this.reserved;
        if (
          want > 0 &&
          (this.look || this.backlog) &&
          this.held.length <= prefetch / 2 &&
          this.claims.length < (this.backlog ? CLAIMS_IN_FLIGHT : 1)
        ) {
          this.claims.push(this.claim(Math.min(want, Math.ceil(most / CLAIMS_IN_FLIGHT))));
          // after a turn, the group commit has taken this claim: the next goes in a batch (and lane) of its own
          await new Promise((resolve) => setImmediate(resolve));
          continue;
        }
        if (this.claims.length > 0) {
          // a full claim means there may be more; a short one that nothing else is claimable yet
          if (!(await this.claims.shift())) {
            await Promise.all(this.claims.splice(0));
            this.due = performance.now() + (await this.idleWait());
            if (this.active && !(await this.wakeup.wait(this.due - performance.now()))) this.look = true;
          }
          continue;
        }
        // full, or enough held for the slots that free next, or nothing to claim until `due`: a finishing handler or a wake-up wakes us
        if (!(await this.wakeup.wait(this.look ? this.options.pollMs : this.due - performance.now()))) this.look = true;
        await this.releaseStale(prefetch);
      }
      // what the last claims took is held: stop() gives it back
      await Promise.all(this.claims.splice(0));
    } finally {
      await unlisten();
    }
  }

  /** How long to sleep when nothing is claimable: until the next scheduled task, or the poll. */
  private async idleWait(): Promise<number> {
    let wait = this.options.pollMs;
    try {
      const dueIn = await this.store.taskDueIn({
        queue: this.queue,
        lookbackMs: Math.ceil(performance.now() - this.shortClaimAt) + 5,
        ...this.tags(),
      });
      if (dueIn !== null) wait = Math.min(wait, Math.max(1, dueIn));
    } catch (error) {
      this.options.onError?.(error);
    }
    return wait;
  }

  /** Ends the leases of crashed or stalled workers (of any queue): their tasks are ready again, or dead. */
  async expireLeases(): Promise<void> {
    await expireLeases(this.store, this.journal, this.options.events);
  }

  /**
   * Claims up to `limit` tasks into `held`, then starts as many as there are free slots. In the
   * group commit: with the completions that freed the slots, one transaction, one flush. A claim
   * writes no event (see lifecycle.ts). True when it got `limit` tasks.
   */
  private async claim(limit: number): Promise<boolean> {
    const leaseToken = newId('lease');
    const sent = performance.now();
    const wakes = this.wakes;
    this.asked += limit;
    let tasks: Task[];
    try {
      ({ value: tasks } = await this.journal.group.submit({
        statement: (store) =>
          store.taskClaim({
            queue: this.queue,
            limit,
            leaseMs: this.options.leaseMs,
            workerId: this.id,
            leaseToken,
            ...this.tags(),
          }),
      }));
    } catch (error) {
      this.options.onError?.(error);
      this.backlog = false;
      this.look = true;
      return false;
    } finally {
      this.asked -= limit;
    }
    this.backlog = tasks.length === limit;
    if (!this.backlog) this.shortClaimAt = sent;
    if (!this.backlog && this.wakes === wakes) this.look = false;
    const events = this.options.events;
    if (events?.has('task:claim'))
      for (const t of tasks)
        events.emit('task:claim', { queue: this.queue, taskId: t.id, attempt: t.attempts, workerId: this.id });
    const at = performance.now();
    for (const task of tasks) this.held.push({ task, at });
    this.startHeld();
    return this.backlog;
  }

  /** Starts held tasks in the free slots, in claim order; a slot `reserve`d for a task being enqueued is not free. */
  private startHeld(): void {
    while (this.held.length > 0 && this.running.size + this.reserved < this.options.concurrency)
      void this.execute(this.held.shift()!.task);
  }

  /** Gives back held tasks nobody started in time: when handlers turned slow, another worker may be free. */
  private async releaseStale(prefetch: number): Promise<void> {
    const now = performance.now();
    const stale = this.held.filter((h, i) => i >= prefetch || now - h.at > PREFETCH_HOLD_MS);
    if (stale.length === 0) return;
    // given back, they would be claimed again at once: not before a slot frees
    this.slotsStuck = true;
    for (const h of stale) this.held.splice(this.held.indexOf(h), 1);
    await this.release(stale).catch((error) => {
      // still ours: held again, the heartbeat renews them
      this.held.unshift(...stale);
      this.options.onError?.(error);
    });
  }

  private async release(held: Array<{ task: Task }>): Promise<void> {
    if (held.length > 0)
      await this.store.taskRelease({ leases: held.map(({ task }) => ({ id: task.id, leaseToken: task.leaseToken! })) });
  }

  private tags(): { tags?: string[] } {
    return this.options.tags ? { tags: this.options.tags() } : {};
  }

  private async execute(task: Task): Promise<void> {
    const abort = new LazyAbort();
    const started = performance.now();
    this.running.set(task.id, { task, abort });
    let result: unknown;
    let failure: { error: unknown } | null = null;
    try {
      // its rate limit first: no room, the task goes back to the queue till the next slot, the attempt not counted;
      // a task with none begins its handler in this tick (a run's pass claimed as inserted begins as its start returns)
      if (task.rateLimit && (await rateGate(this.store, task, this.options.onError))) return this.gaveBack(task.id);
      const ctx: TaskContext = {
        task,
        attempt: task.attempts,
        get signal() {
          return abort.signal;
        },
      };
      result = (await this.handler(task.payload, ctx)) ?? null;
      checkResult(result, this.options.maxResultBytes);
    } catch (error) {
      failure = { error };
    }
    this.handlerMs += (performance.now() - started - this.handlerMs) / 10;
    this.slotsStuck = false;
    // The slot is free once the handler is done: a held task starts now, the next claim overlaps this task's commit.
    // Not if the database cut the attempt short: the slot is kept till the task is back in its place (see `fail`), or
    // the claims that resume with the database take newer tasks first.
    const cut = failure !== null && storeUnavailable(failure.error) !== null;
    if (!cut) {
      this.running.delete(task.id);
      this.settling.set(task.id, task);
      this.startHeld();
      this.wakeup.wake();
    }
    let outcome: Outcome = 'lost';
    const attempt = failure ? { error: failure.error } : { result };
    try {
      outcome = await settleAttempt(this.store, this.journal, task, this.id, attempt, this.settleWith);
    } finally {
      this.running.delete(task.id);
      this.settling.delete(task.id);
    }
    // a retry soon (an outage's is due at once), or a slot kept till now: look again now rather than at the next poll
    if (outcome === 'failed' || cut) this.lookAgain();
    const events = this.options.events;
    // a task cancelled by a newer one of its key (its signal's reason) reports no lost lease: it was ended on purpose
    if (outcome === 'completed')
      events?.emit('task:complete', {
        queue: this.queue,
        taskId: task.id,
        attempt: task.attempts,
        durationMs: performance.now() - started,
      });
    else if (outcome === 'lost' && !(abort.reason instanceof CancelledError))
      events?.emit('lease:lost', { what: 'task', queue: this.queue, id: task.id });
    this.options.onSettled?.(task, outcome);
  }

  /** The task went back to the queue (`rateGate`): its slot is free. */
  private gaveBack(id: string): void {
    this.running.delete(id);
    this.startHeld();
    this.lookAgain();
  }

  /** Renews the leases of held, running and settling tasks; aborts running ones lost (`lostReason`), forgets held. */
  private async heartbeat(): Promise<void> {
    const tasks = [
      ...this.held.map(({ task }) => task),
      ...[...this.running.values()].map(({ task }) => task),
      ...this.settling.values(),
    ];
    if (tasks.length === 0) return;
    const renewed = new Set(
      await this.store.taskHeartbeat({
        leases: tasks.map((task) => ({ id: task.id, leaseToken: task.leaseToken! })),
        leaseMs: this.options.leaseMs,
      }),
    );
    // only what was asked about: a task claimed meanwhile was not
    const asked = new Set(tasks.map((task) => task.id));
    const lost = (id: string) => asked.has(id) && !renewed.has(id);
    for (const { task, abort } of this.running.values())
      if (lost(task.id)) void lostReason(this.journal, task.id).then((reason) => abort.abort(reason));
    for (let i = this.held.length - 1; i >= 0; i--) if (lost(this.held[i]!.task.id)) this.held.splice(i, 1);
  }
}
