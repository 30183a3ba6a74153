import { z } from 'zod';
import {
  ConflictError,
  describeError,
  LeaseLostError,
  NotFoundError,
  TerminalError,
  ValidationError,
  type Problem,
} from '../errors.js';
import { newId } from '../ids.js';
import type { Journal } from '../journal/journal.js';
import { StoreClock } from '../runtime/pass/clock.js';
import { isTerminal, RUN_VIEW, runView } from '../runtime/read/view.js';
import type { NewEvent, Store } from '../storage/store.js';
import { zodProblems } from '../problems.js';
import { mapInput, validateInputMapping } from './input.js';
import { backfillSchedule } from './schedule-backfill.js';
import { parseCron } from './schedule-cron.js';
import { checkTarget, type RunStarter, type Started, type Target } from './target.js';

export const SCHEDULE_VIEW = 'schedule';
const STATE_VIEW = 'schedule-state';
/** A schedule's definition (`schedule.created`, `schedule.deleted`): what schedulers reload on. */
export const SCHEDULE_STREAM_PREFIX = 'schedule:';
export const scheduleStream = (id: string) => `${SCHEDULE_STREAM_PREFIX}${id}`;
export { parseCron, slotAfter, slotBefore } from './schedule-cron.js';

/** What each slot came to (`schedule.fired`, `.skipped`, `.failed`): apart, so a firing does not make every scheduler reload. */
const slotStream = (id: string) => `schedule-slot:${id}`;

/** The most slots one backfill starts runs for. */
export const BACKFILL_SLOTS = 100;

/** A schedule without `input` hands its runs the whole tick: `{ schedule_id, slot, catch_up }`. */
export const DEFAULT_SCHEDULE_INPUT = '$';

export const scheduleRequest = z
  .object({
    name: z.string().min(1).max(128).optional(),
    /** 5 fields, or 6 with leading seconds; `@hourly` and friends too. */
    cron: z.string().min(1).max(256),
    /** IANA time zone the cron fields are read in. */
    timezone: z.string().min(1).max(64).default('UTC'),
    target: z.object({ workflow: z.string().optional(), agent: z.string().optional() }).catchall(z.unknown()),
    input: z.unknown().optional(),
    /** `skip`: a slot passes while the schedule's previous run has not ended. */
    overlap: z.enum(['skip', 'allow']).default('skip'),
    /** After downtime: `skip` the missed slots, or run `one` of them (the latest). */
    catch_up: z.enum(['skip', 'one']).default('skip'),
  })
  .strict();

export interface Schedule {
  id: string;
  name: string | null;
  cron: string;
  timezone: string;
  target: Target;
  input: unknown;
  overlap: 'skip' | 'allow';
  catch_up: 'skip' | 'one';
  /** A paused schedule fires nothing; resumed, it fires from the next slot after the resume on. */
  paused: boolean;
  created_at: string;
  /** When it was last edited, paused or resumed (its creation before that): no slot up to then fires. */
  updated_at: string;
}

/** What the latest slot came to; counts over the schedule's life. */
export interface ScheduleState {
  last_slot: string | null;
  last_slot_ms: number | null;
  last_outcome: 'fired' | 'skipped' | 'failed' | null;
  /** The run the latest fired slot started: with `overlap: skip`, no slot fires until it has ended. */
  last_run_id: string | null;
  last_error: string | null;
  fired: number;
  skipped: number;
  failed: number;
}

export interface ScheduleView extends Schedule {
  /** The next three slots, ISO 8601 UTC; none while paused. */
  next: string[];
  state: ScheduleState;
}

/** `paused`: the schedule is paused, or was edited or resumed after the slot (a scheduler that has not reloaded yet). */
export type FireOutcome = 'fired' | 'skipped' | 'failed' | 'taken' | 'gone' | 'paused';

/** The schedule events that change its definition: each makes every scheduler reload. */
const DEFINITION_EVENTS = [
  'schedule.created',
  'schedule.updated',
  'schedule.paused',
  'schedule.resumed',
  'schedule.deleted',
];

/** The schedules stored before `paused` and `updated_at` existed had neither. */
const stored = (value: unknown): Schedule => {
  const s = value as Schedule;
  return { ...s, paused: s.paused === true, updated_at: s.updated_at ?? s.created_at };
};

const EMPTY_STATE: ScheduleState = {
  last_slot: null,
  last_slot_ms: null,
  last_outcome: null,
  last_run_id: null,
  last_error: null,
  fired: 0,
  skipped: 0,
  failed: 0,
};
const PERMANENT = [ValidationError, NotFoundError, TerminalError];
/** Thrown to roll a firing back: another process recorded the slot first. */
const TAKEN = Symbol('taken');

/**
 * Cron schedules. A schedule is the stream `schedule:<id>`; what each of its slots came to is the
 * stream `schedule-slot:<id>`, one event per slot, written with the idempotency key
 * `schedule-slot:<id>:<slot>` and the stream's expected version in the transaction that starts the
 * slot's run (key `<id>:<slot>`): however many schedulers reach a slot, one records it and starts
 * one run, and the others roll back. One instance per journal (its constructor registers the projections).
 *
 * @example
 * const s = await schedules.create({ cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', target: { workflow: 'report' } });
 */
export class Schedules {
  /** `next` is reckoned on the database clock, as the slots fire (a test engine's clock, too). */
  private readonly clock: StoreClock;

  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    private readonly starter: RunStarter,
  ) {
    this.clock = new StoreClock(store);
    journal.project(DEFINITION_EVENTS, async (event, tx) => {
      const id = event.streamId.slice(SCHEDULE_STREAM_PREFIX.length);
      if (event.type === 'schedule.deleted') {
        await tx.projectionDelete({ name: SCHEDULE_VIEW, key: id });
        await tx.projectionDelete({ name: STATE_VIEW, key: id });
        return;
      }
      const at = new Date(event.timestamp).toISOString();
      if (event.type === 'schedule.created') {
        const value = { ...(event.data as object), id, paused: false, created_at: at, updated_at: at };
        await tx.projectionPut({ name: SCHEDULE_VIEW, key: id, value });
        return;
      }
      const old = await tx.projectionGet({ name: SCHEDULE_VIEW, key: id });
      if (!old) return;
      const change =
        event.type === 'schedule.updated' ? (event.data as object) : { paused: event.type === 'schedule.paused' };
      await tx.projectionPut({ name: SCHEDULE_VIEW, key: id, value: { ...stored(old), ...change, updated_at: at } });
    });
    journal.project(['schedule.fired', 'schedule.skipped', 'schedule.failed'], async (event, tx) => {
      const id = event.streamId.slice('schedule-slot:'.length);
      const data = event.data as { slot: string; run_id?: string; error?: string };
      const state =
        ((await tx.projectionGet({ name: STATE_VIEW, key: id })) as ScheduleState | undefined) ?? EMPTY_STATE;
      const outcome = event.type.slice('schedule.'.length) as 'fired' | 'skipped' | 'failed';
      await tx.projectionPut({
        name: STATE_VIEW,
        key: id,
        value: {
          ...state,
          last_slot: data.slot,
          last_slot_ms: Date.parse(data.slot),
          last_outcome: outcome,
          last_run_id: outcome === 'fired' ? data.run_id! : state.last_run_id,
          last_error: outcome === 'failed' ? data.error! : state.last_error,
          [outcome]: state[outcome] + 1,
        },
      });
    });
  }

  /** Checks every field (the cron and time zone, the input mapping, then the target) and stores the schedule. */
  async create(body: unknown): Promise<ScheduleView> {
    const id = newId('sch');
    const data = await this.check(body);
    await this.journal.append(scheduleStream(id), [{ type: 'schedule.created', data }], { expectedVersion: 0 });
    return this.get(id);
  }

  /**
   * Replaces the schedule's name, cron, time zone, target, input, overlap and catch-up (checked as `create` checks
   * them); its id, state and whether it is paused stay. Slots of the new cron after the edit fire.
   */
  async update(id: string, body: unknown): Promise<ScheduleView> {
    const data = await this.check(body);
    await this.change(id, { type: 'schedule.updated', data });
    return this.get(id);
  }

  /** Pauses (`true`) or resumes the schedule: resumed, it fires the next slot after now, not those missed meanwhile. */
  async setPaused(id: string, paused: boolean): Promise<ScheduleView> {
    await this.change(id, { type: paused ? 'schedule.paused' : 'schedule.resumed', data: {} });
    return this.get(id);
  }

  private async change(id: string, event: NewEvent): Promise<void> {
    await this.store.transaction(async (tx) => {
      if (!(await tx.projectionGet({ name: SCHEDULE_VIEW, key: id })))
        throw new NotFoundError(`schedule ${id} not found`);
      await this.journal.append(scheduleStream(id), [event], { tx });
    });
  }

  private async check(body: unknown) {
    const parsed = scheduleRequest.safeParse(body);
    const problems: Problem[] = parsed.success
      ? []
      : zodProblems(parsed.error).filter((p) => !p.path.startsWith('target'));
    const raw = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    if (parsed.success) {
      try {
        parseCron(parsed.data.cron, parsed.data.timezone);
      } catch (error) {
        problems.push(...(error as ValidationError).problems);
      }
    }
    if (raw.input !== undefined) problems.push(...validateInputMapping(raw.input));
    const target = await checkTarget(this.starter, raw.target, problems);
    if (problems.length > 0 || !parsed.success || !target)
      throw ValidationError.of(problems.length ? problems : [{ path: '(body)', message: 'is not a schedule' }]);
    const { name, cron, timezone, overlap, catch_up } = parsed.data;
    const input = raw.input === undefined ? DEFAULT_SCHEDULE_INPUT : raw.input;
    return { name: name ?? null, cron, timezone, target, input, overlap, catch_up };
  }

  async get(id: string): Promise<ScheduleView> {
    const schedule = await this.store.projectionGet({ name: SCHEDULE_VIEW, key: id });
    if (!schedule) throw new NotFoundError(`schedule ${id} not found`);
    await this.clock.ready();
    return this.view(stored(schedule), this.clock.now());
  }

  /** Newest first (ids are ULIDs: id descending is creation order); `last_key` of a page continues after it, null on the last page. */
  async list(
    options: { limit?: number; last_key?: string | null } = {},
  ): Promise<{ schedules: ScheduleView[]; count: number; last_key: string | null }> {
    const limit = options.limit ?? 100;
    const rows = await this.store.projectionList({
      name: SCHEDULE_VIEW,
      limit: limit + 1,
      backwards: true,
      ...(options.last_key ? { before: options.last_key } : {}),
    });
    await this.clock.ready();
    const now = this.clock.now();
    const schedules = await Promise.all(rows.slice(0, limit).map((r) => this.view(stored(r.value), now)));
    return {
      schedules,
      count: schedules.length,
      last_key: rows.length > limit ? (schedules.at(-1)?.id ?? null) : null,
    };
  }

  /** Every schedule with its state, for a scheduler. */
  async all(): Promise<Array<{ schedule: Schedule; state: ScheduleState }>> {
    const out: Array<{ schedule: Schedule; state: ScheduleState }> = [];
    for (let after: string | undefined; ; ) {
      const rows = await this.store.projectionList({
        name: SCHEDULE_VIEW,
        limit: 500,
        ...(after === undefined ? {} : { after }),
      });
      for (const row of rows) out.push({ schedule: stored(row.value), state: await this.state(row.key) });
      if (rows.length < 500) return out;
      after = rows.at(-1)!.key;
    }
  }

  /** Deletes the schedule: no slot fires after this commits (a firing in flight finds it gone); runs it started go on. */
  async delete(id: string): Promise<void> {
    await this.change(id, { type: 'schedule.deleted', data: {} });
  }

  /**
   * Fires one slot, once across every process: `taken` when it (or, for a catch-up, any slot after
   * `since`) was recorded already, `skipped` while the previous run has not ended (`overlap: skip`),
   * `failed` when the target cannot start (recorded, not retried), `gone` when the schedule was deleted.
   */
  async fire(id: string, slot: number, options: { catchUp?: boolean; since?: number } = {}): Promise<FireOutcome> {
    const slotIso = new Date(slot).toISOString();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.store.transaction(async (tx): Promise<FireOutcome> => {
          const found = await tx.projectionGet({ name: SCHEDULE_VIEW, key: id });
          if (!found) return 'gone';
          const schedule = stored(found);
          if (schedule.paused || slot <= Date.parse(schedule.updated_at)) return 'paused';
          const state =
            ((await tx.projectionGet({ name: STATE_VIEW, key: id })) as ScheduleState | undefined) ?? EMPTY_STATE;
          const last = state.last_slot_ms ?? -Infinity;
          if (last >= slot || (options.catchUp && last > (options.since ?? -Infinity))) return 'taken';
          const [head] = await this.journal.readStream(slotStream(id), { backwards: true, limit: 1, tx });
          const record = async (event: NewEvent) => {
            const key = `schedule-slot:${id}:${slotIso}`;
            const appended = await this.journal.append(slotStream(id), [event], {
              tx,
              expectedVersion: head?.version ?? 0,
              idempotencyKey: key,
            });
            if (appended.duplicate) throw TAKEN;
          };
          if (schedule.overlap === 'skip' && state.last_run_id !== null) {
            const previous = runView(await tx.projectionGet({ name: RUN_VIEW, key: state.last_run_id }));
            // a run without a view (an agent session kept elsewhere) cannot be waited for: it does not block
            if (previous && !isTerminal(previous.status)) {
              await record({
                type: 'schedule.skipped',
                data: { slot: slotIso, reason: 'overlap', run_id: state.last_run_id },
              });
              return 'skipped';
            }
          }
          let started: Started;
          try {
            const tick = { schedule_id: id, slot: slotIso, catch_up: options.catchUp === true };
            started = await this.starter.start({
              target: schedule.target,
              input: mapInput(schedule.input, tick),
              key: `${id}:${slotIso}`,
              tx,
              trigger_type: 'schedule',
            });
          } catch (error) {
            if (!PERMANENT.some((kind) => error instanceof kind)) throw error;
            await record({ type: 'schedule.failed', data: { slot: slotIso, error: describeError(error) } });
            return 'failed';
          }
          await record({
            type: 'schedule.fired',
            data: { slot: slotIso, ...started, catch_up: options.catchUp === true },
          });
          return 'fired';
        });
      } catch (error) {
        if (error === TAKEN) return 'taken';
        // another process recorded a slot since this one read the stream: look again
        if (error instanceof ConflictError && !(error instanceof LeaseLostError) && attempt < 3) continue;
        throw error;
      }
    }
  }

  /** Starts a run for each slot of a past window: see `backfillSchedule`. */
  backfill(id: string, from: number, to: number, now = Date.now()): Promise<Array<{ slot: string } & Started>> {
    return backfillSchedule(this.store, this.journal, this.starter, { id, from, to, now });
  }

  private async state(id: string): Promise<ScheduleState> {
    return (
      ((await this.store.projectionGet({ name: STATE_VIEW, key: id })) as ScheduleState | undefined) ?? EMPTY_STATE
    );
  }

  private async view(schedule: Schedule, now: number): Promise<ScheduleView> {
    const next = schedule.paused
      ? []
      : parseCron(schedule.cron, schedule.timezone)
          .nextRuns(3, new Date(now))
          .map((d) => d.toISOString());
    return { ...schedule, next, state: await this.state(schedule.id) };
  }
}
