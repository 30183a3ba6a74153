import type { Cron } from 'croner';
import type { Journal, Watch } from '../journal/journal.js';
import type { Wakeup } from '../journal/wakeup.js';
import { StoreClock } from '../runtime/pass/clock.js';
import type { Store } from '../storage/store.js';
import {
  parseCron,
  SCHEDULE_STREAM_PREFIX,
  slotAfter,
  slotBefore,
  type FireOutcome,
  type Schedule,
  type Schedules,
} from './schedules.js';

export interface SchedulerOptions {
  /** A slot up to this late fires, each one (timer jitter, a busy event loop). Default 2 s. */
  graceMs?: number;
  /** Beyond the grace, only the newest due slot still fires, up to this late; older ones are missed. Default 60 s. */
  toleranceMs?: number;
  /** The slow reload, for changes no wake-up announced (SQLite in another process). Default 30 s. */
  reloadMs?: number;
  /** A firing that threw (the database went away) is tried again this much later. Default 1 s. */
  retryMs?: number;
  onError?: (error: unknown) => void;
  /** What each slot this process reached came to (`taken`: another process recorded it). */
  onFire?: (p: { schedule_id: string; slot: string; catch_up: boolean; outcome: FireOutcome }) => void;
}

interface Entry {
  schedule: Schedule;
  cron: Cron;
  /** Slots up to here are dealt with by this process. */
  cursor: number;
}

/**
 * The timer loop that fires schedules in one process; run one in every process you like. It sleeps
 * until the nearest slot of all schedules (no polling per second), reloads them when a
 * `schedule:` stream changes (a wake-up of the store) and every `reloadMs`, and hands each due
 * slot to `Schedules.fire`, which records it once however many schedulers get there.
 *
 * What is due when it wakes, for each schedule not paused: the slots after its cursor (the last slot
 * recorded, or its creation, edit or resume, when the process starts or the schedule changes). Those at most `graceMs` old fire; beyond that the
 * newest due slot still fires when at most `toleranceMs` old; every older slot is missed. Missed
 * slots (downtime, a stall) are skipped, or with `catch_up: 'one'` the latest of them fires, once,
 * unless some process recorded a slot after the cursor meanwhile (the downtime was not total).
 *
 * @example
 * const scheduler = new Scheduler(store, journal, schedules, { onError: console.error });
 * await scheduler.start();
 */
export class Scheduler {
  private readonly options: Required<Omit<SchedulerOptions, 'onError' | 'onFire'>> & SchedulerOptions;
  private readonly entries = new Map<string, Entry>();
  private running = false;
  private dirty = true;
  private reloadAt = 0;
  private retryAt = Infinity;
  private loop: Promise<void> | null = null;
  private watch: Watch | null = null;
  /** Slots are on the database clock, like schedules' creation times and runs' timers: a process whose clock is off fires on time. */
  private readonly clock: StoreClock;

  constructor(
    store: Store,
    private readonly journal: Journal,
    private readonly schedules: Schedules,
    options: SchedulerOptions = {},
  ) {
    this.options = { graceMs: 2000, toleranceMs: 60_000, reloadMs: 30_000, retryMs: 1000, ...options };
    this.clock = new StoreClock(store);
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.watch = await this.journal.watch((stream) => {
      if (stream !== '' && !stream.startsWith(SCHEDULE_STREAM_PREFIX)) return false;
      this.dirty = true;
      return true;
    });
    this.running = true;
    this.dirty = true;
    this.loop = this.run(this.watch.wakeup);
  }

  /** Stops after the firing in hand. */
  async stop(): Promise<void> {
    this.running = false;
    this.watch?.wakeup.wake();
    await this.loop;
    this.loop = null;
    await this.watch?.stop();
    this.watch = null;
    this.entries.clear();
  }

  /**
   * Reloads the schedules and fires the slots due now, as the timer loop does, without the loop: for a
   * caller that moves the clock itself (the test engine of `runledger/testing`; do not `start` this
   * scheduler too). Resolves with when the next slot of any schedule comes (ms), or null when none will.
   *
   * @example const next = await scheduler.fireDue(); // clock.set(next), then fireDue() again
   */
  async fireDue(): Promise<number | null> {
    await this.reload();
    const next = await this.tick();
    return Number.isFinite(next) ? next : null;
  }

  private async run(wakeup: Wakeup): Promise<void> {
    while (this.running) {
      let next = Infinity;
      try {
        if (this.dirty || Date.now() >= this.reloadAt) await this.reload();
        next = await this.tick();
      } catch (error) {
        this.options.onError?.(error);
        next = this.clock.now() + this.options.retryMs;
      }
      if (!this.running) break;
      await wakeup.wait(Math.min(Math.min(next, this.retryAt) - this.clock.now(), this.reloadAt - Date.now()));
    }
  }

  private async reload(): Promise<void> {
    this.dirty = false;
    this.reloadAt = Date.now() + this.options.reloadMs;
    const seen = new Set<string>();
    for (const { schedule, state } of await this.schedules.all()) {
      if (schedule.paused) continue;
      seen.add(schedule.id);
      if (this.entries.get(schedule.id)?.schedule.updated_at === schedule.updated_at) continue;
      // new, edited or resumed: its slots start after the change (those missed while paused are not fired)
      const cron = parseCron(schedule.cron, schedule.timezone);
      this.entries.set(schedule.id, {
        schedule,
        cron,
        cursor: Math.max(Date.parse(schedule.updated_at), state.last_slot_ms ?? -Infinity),
      });
    }
    for (const id of this.entries.keys()) if (!seen.has(id)) this.entries.delete(id);
  }

  /** Fires what is due; returns when the next slot of any schedule comes. */
  private async tick(): Promise<number> {
    await this.clock.ready();
    const now = this.clock.now();
    this.retryAt = Infinity;
    await Promise.all([...this.entries.values()].map((entry) => this.due(entry, now)));
    let next = Infinity;
    for (const entry of this.entries.values())
      next = Math.min(next, slotAfter(entry.cron, Math.max(entry.cursor, now)) ?? Infinity);
    return next;
  }

  private async due(entry: Entry, now: number): Promise<void> {
    const { cron, schedule } = entry;
    const newest = slotBefore(cron, now + 1);
    if (newest === null || newest <= entry.cursor) return;
    const onTime: number[] = [];
    for (
      let slot = slotAfter(cron, Math.max(entry.cursor, now - this.options.graceMs - 1));
      slot !== null && slot <= now;
      slot = slotAfter(cron, slot)
    )
      onTime.push(slot);
    if (onTime.length === 0 && now - newest <= this.options.toleranceMs) onTime.push(newest);
    const missed = slotBefore(cron, onTime[0] ?? now + 1);
    const fires: Array<{ slot: number; catchUp: boolean }> = onTime.map((slot) => ({ slot, catchUp: false }));
    if (missed !== null && missed > entry.cursor && schedule.catch_up === 'one')
      fires.unshift({ slot: missed, catchUp: true });
    const since = entry.cursor;
    for (const { slot, catchUp } of fires) {
      let outcome: FireOutcome;
      try {
        outcome = await this.schedules.fire(schedule.id, slot, catchUp ? { catchUp, since } : {});
      } catch (error) {
        this.options.onError?.(error);
        this.retryAt = Math.min(this.retryAt, this.clock.now() + this.options.retryMs);
        return;
      }
      entry.cursor = Math.max(entry.cursor, slot);
      this.options.onFire?.({
        schedule_id: schedule.id,
        slot: new Date(slot).toISOString(),
        catch_up: catchUp,
        outcome,
      });
    }
    entry.cursor = Math.max(entry.cursor, now);
  }
}
