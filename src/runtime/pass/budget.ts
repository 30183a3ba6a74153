import { toMs } from '../../duration.js';
import { BudgetExceededError, ValidationError } from '../../errors.js';
import type { NewEvent, StoredEvent } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import type { Budget, Usage } from '../flow.js';
import { Suspension } from './calls.js';
import type { EntryKind, History, Seq } from './history.js';

/**
 * A run's budget, checked before each new step, poll or child call: what the run used so far (`ctx.usage` totals,
 * from the journal, and the step calls it started) against its budget and the extensions people approved. Over it,
 * the run fails with a BudgetExceededError, or (`onExceed: 'approve'`) journals `budget.exceeded` and waits, durably,
 * for a decision sent to it as signal BUDGET_SIGNAL (`decideBudget`); the decision is journaled with who made it.
 */

/** The signal a budget decision is sent as: `{ round, decision: 'approve' | 'reject', by, extend? }`. */
export const BUDGET_SIGNAL = 'runledger.budget';

/** A run's usage totals: what `ctx.usage` reported, the step calls (steps and polls) it started, and its agent's tool calls. */
export interface UsageTotals {
  tokens: number;
  cost: number;
  toolCalls: number;
  steps: number;
}

type Capped = 'tokens' | 'cost' | 'toolCalls' | 'steps' | 'wallTime';
const UNIT: Record<Capped, string> = {
  tokens: 'tokens',
  cost: 'cost',
  toolCalls: 'tool calls',
  steps: 'steps',
  wallTime: 'ms wall time',
};
const COUNTS = ['tokens', 'cost', 'toolCalls', 'steps'] as const;

/** The budget passed: which cap, the figure it reached and the cap. */
export interface Passed {
  budget: Capped;
  used: number;
  limit: number;
  reason: string;
}

/** The run's budget as its start recorded it (the merged flow options), or null. */
export function budgetOf(history: History): Budget | null {
  return history.flow?.budget ?? null;
}

const figure = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 4 });

/** The first cap of `budget` that `used` (and `elapsedMs` since the run's start) passes, or null. */
export function passedBudget(budget: Budget, used: UsageTotals, elapsedMs: number): Passed | null {
  const over = (name: Capped, value: number, limit: number | undefined): Passed | null =>
    limit !== undefined && value > limit
      ? { budget: name, used: value, limit, reason: `budget: ${figure(value)} of ${figure(limit)} ${UNIT[name]}` }
      : null;
  for (const name of COUNTS) {
    const passed = over(name, used[name], budget[name]);
    if (passed) return passed;
  }
  return budget.wallTime === undefined ? null : over('wallTime', elapsedMs, toMs(budget.wallTime));
}

/** `budget` with `extend` on top (each cap `extend` names grows by it); `extend` absent: the same budget again. */
export function extendBudget(budget: Budget, base: Budget, extend: Budget | undefined): Budget {
  const more = extend ?? base;
  const out: Budget = { ...budget };
  for (const name of COUNTS) if (more[name] !== undefined) out[name] = (budget[name] ?? 0) + more[name]!;
  if (more.wallTime !== undefined)
    out.wallTime = (budget.wallTime === undefined ? 0 : toMs(budget.wallTime)) + toMs(more.wallTime);
  return out;
}

/** What `ctx.usage` was given, checked: non-negative numbers, tool calls whole; a ValidationError names the field. */
export function checkUsage(used: Usage): Required<Usage> {
  if (typeof used !== 'object' || used === null) throw new ValidationError('usage', 'must be an object');
  const out = { tokens: 0, cost: 0, toolCalls: 0 };
  for (const [key, value] of Object.entries(used)) {
    if (!(key in out)) throw new ValidationError(`usage.${key}`, 'is not one of tokens, cost, toolCalls');
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1e15)
      throw new ValidationError(`usage.${key}`, `must be a number from 0 to 1e15 (got ${JSON.stringify(value)})`);
    if (key === 'toolCalls' && !Number.isInteger(value))
      throw new ValidationError('usage.toolCalls', `must be a whole number (got ${value})`);
    out[key as keyof typeof out] = value;
  }
  return out;
}

/** What an earlier generation of the run handed on (`run.continued`'s `usage` and `since`); none for the first. */
interface Carried {
  usage?: UsageTotals;
  since?: number;
}

const carriedOf = (history: History): Carried => (history.started?.data ?? {}) as Carried;

/** When the run began, its first generation's start (ms): its wall time counts from then. */
function sinceOf(history: History): number | undefined {
  return carriedOf(history).since ?? history.started?.timestamp;
}

function addUsage(totals: UsageTotals, used: Partial<UsageTotals>): void {
  for (const name of COUNTS) totals[name] += used[name] ?? 0;
}

/** The run's usage totals through `history`: what earlier generations carried, and this one's steps and reports. */
export function usageOf(history: History): UsageTotals {
  const totals: UsageTotals = { tokens: 0, cost: 0, toolCalls: 0, steps: 0 };
  addUsage(totals, carriedOf(history).usage ?? {});
  for (const entry of history.entries.values()) {
    if (entry.kind === 'step' || entry.kind === 'poll') totals.steps += 1;
    if (entry.kind === 'step' && entry.name.startsWith(TOOL_STEP)) totals.toolCalls += 1;
    for (const event of entry.events)
      if (event.type === RUN_EVENT.usageRecorded) addUsage(totals, (event.data as { used: Required<Usage> }).used);
      // a model call's completion carries what it used (`ctx.generate`)
      else if (event.type === RUN_EVENT.stepCompleted) addUsage(totals, (event.data as { used?: Usage }).used ?? {});
  }
  return totals;
}

/**
 * What the run's next generation carries (in its `run.continued`): a budget is the run's, so `continueAsNew` does not
 * escape it. The usage totals so far (`usage`: the ending pass's, with the steps it began) and the run's start go on;
 * what people approved is read from the whole stream.
 *
 * @example { generation: 2, input, ...carriedUsage(history, pass.usage) } // { …, usage: { tokens: 120, … }, since: 1764… }
 */
export function carriedUsage(history: History, usage: UsageTotals): Required<Carried> | Record<string, never> {
  const since = sinceOf(history);
  return since === undefined ? {} : { usage, since };
}

/** What the gate needs of the pass it checks. */
export interface BudgetHost {
  readonly history: History;
  write(events: NewEvent[]): Promise<void>;
  /** The database clock. */
  now(): number;
  /** Throws when no new work may start (cancelled, past its deadline, paused). */
  checkLive(): void;
  /** The run's `budget.*` events: read only once the run is over its own budget. */
  budgetEvents(): Promise<StoredEvent[]>;
  /** Ends the pass failed with `error` (its compensations run), whatever the code does with the throw. */
  fail(error: unknown): void;
}

const GATED = new Set<EntryKind>(['step', 'poll', 'child']);
/** A ledger agent's tool call is a step of this name (`tool:search`): each counts as a tool call, unreported. */
const TOOL_STEP = 'tool:';

interface Round {
  round: number;
  reason: string;
  decided: boolean;
}

/** One pass's view of its run's budget and usage (see the top of this file). */
export class BudgetGate {
  readonly totals: UsageTotals = { tokens: 0, cost: 0, toolCalls: 0, steps: 0 };
  private limits: Budget;
  private loaded: { rounds: Round[]; signals: Set<number> } | null = null;
  /** Checks of parallel branches, one after another: each sees the steps counted before it. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly host: BudgetHost,
    readonly budget: Budget | null,
  ) {
    this.limits = budget ?? {};
    Object.assign(this.totals, usageOf(host.history));
  }

  /** Whether a call of `kind` at a position the journal does not hold yet is checked against the budget first. */
  gates(kind: EntryKind): boolean {
    return this.budget !== null && GATED.has(kind);
  }

  /** `ctx.usage` at `seq`: journaled once with the running totals; a replay returns without counting it again. */
  async record(seq: Seq, used: Usage): Promise<void> {
    const checked = checkUsage(used);
    if (this.host.history.find(seq, RUN_EVENT.usageRecorded)) return;
    this.host.checkLive();
    this.add(checked);
    const { tokens, cost, toolCalls } = this.totals;
    await this.host.write([
      {
        type: RUN_EVENT.usageRecorded,
        data: { seq, name: 'usage', used: checked, totals: { tokens, cost, toolCalls } },
      },
    ]);
  }

  /** A model call's tokens and cost (journaled with its completion, see generate.ts): the next call is checked on them. */
  charge(used: { tokens: number; cost: number }): void {
    this.add({ ...used, toolCalls: 0 });
  }

  /** Before a new call of `kind`: resolves when the budget allows it; fails the run or waits when it does not. */
  before(kind: EntryKind, name: string): Promise<void> {
    const tool = kind === 'step' && name.startsWith(TOOL_STEP) ? 1 : 0;
    const check = this.chain.then(() => this.check(kind === 'step' || kind === 'poll' ? 1 : 0, tool));
    this.chain = check.catch(() => {});
    return check;
  }

  private add(used: Required<Usage>): void {
    addUsage(this.totals, used);
  }

  private async check(steps: number, tools: number): Promise<void> {
    const budget = this.budget!;
    this.host.checkLive();
    const started = sinceOf(this.host.history) ?? this.host.now();
    for (;;) {
      const passed = passedBudget(
        this.limits,
        { ...this.totals, steps: this.totals.steps + steps, toolCalls: this.totals.toolCalls + tools },
        this.host.now() - started,
      );
      if (!passed) {
        this.totals.steps += steps;
        this.totals.toolCalls += tools;
        return;
      }
      if (!this.loaded) {
        await this.load();
        continue;
      }
      if (budget.onExceed !== 'approve') {
        await this.host.write([{ type: RUN_EVENT.budgetExceeded, data: { ...passed, onExceed: 'fail' } }]);
        throw this.failed(passed, passed.reason);
      }
      const rounds = this.loaded.rounds;
      const open = rounds.at(-1)?.decided === false ? rounds.at(-1)! : null;
      if (!open) {
        const round = { round: rounds.length + 1, reason: `${passed.reason} — approve to continue`, decided: false };
        await this.host.write([{ type: RUN_EVENT.budgetExceeded, data: { ...passed, ...round, onExceed: 'approve' } }]);
        rounds.push(round);
        throw new Suspension(Number.POSITIVE_INFINITY);
      }
      const decision = this.decision(open.round);
      // the decision's signal wakes the run
      if (!decision) throw new Suspension(Number.POSITIVE_INFINITY);
      const { version, approve, by, extend } = decision;
      if (approve) this.limits = extendBudget(this.limits, budget, extend);
      await this.host.write([
        {
          type: RUN_EVENT.budgetDecided,
          data: {
            round: open.round,
            decision: approve ? 'approve' : 'reject',
            by,
            signal: version,
            budget: this.limits,
          },
        },
      ]);
      open.decided = true;
      this.loaded.signals.add(version);
      if (!approve) throw this.failed(passed, `${passed.reason} — rejected by ${by}`);
    }
  }

  private failed(passed: Passed, message: string): BudgetExceededError {
    const error = new BudgetExceededError(passed.budget, passed.used, passed.limit, message);
    this.host.fail(error);
    return error;
  }

  /** The budget people extended it to, and the waits for a decision, from the run's `budget.*` events. */
  private async load(): Promise<void> {
    const loaded = { rounds: [] as Round[], signals: new Set<number>() };
    for (const event of await this.host.budgetEvents()) {
      const data = event.data as {
        onExceed?: string;
        round: number;
        reason: string;
        signal: number;
        decision?: string;
        budget: Budget;
      };
      if (event.type === RUN_EVENT.budgetExceeded && data.onExceed === 'approve')
        loaded.rounds.push({ round: data.round, reason: data.reason, decided: false });
      if (event.type === RUN_EVENT.budgetDecided) {
        const round = loaded.rounds.find((r) => r.round === data.round);
        if (round) round.decided = true;
        loaded.signals.add(data.signal);
        if (data.decision === 'approve') this.limits = data.budget;
      }
    }
    this.loaded = loaded;
  }

  /** The first decision sent for wait `round` that no decision of the journal took yet. */
  private decision(round: number): { version: number; approve: boolean; by: string; extend?: Budget } | null {
    for (const s of this.host.history.signals) {
      const p = s.payload as { round?: unknown; decision?: unknown; by?: unknown; extend?: Budget } | null;
      if (s.name !== BUDGET_SIGNAL || this.loaded!.signals.has(s.version) || p?.round !== round) continue;
      return {
        version: s.version,
        approve: p.decision === 'approve',
        by: typeof p.by === 'string' ? p.by : 'unknown',
        ...(p.extend ? { extend: p.extend } : {}),
      };
    }
    return null;
  }
}
