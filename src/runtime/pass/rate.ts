import { crashPoint } from '../../crash.js';
import { TerminalError, ValidationError } from '../../errors.js';
import type { NewEvent, RateTakeResult, RateUse, Store } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import { resolveKey } from '../flow-check.js';
import type { RateLimitUse } from '../flow.js';
import { failureData, Suspension } from './calls.js';
import type { History, Seq } from './history.js';

// what a call leaves to its limits once it is over, shared with tasks (a floor below)
export { rateDeferral, rateExtra } from '../../storage/rate-after.js';

/** What a step's rate limits need of the pass. */
export interface RateHost {
  readonly runId: string;
  readonly history: History;
  /** Journals `events` and runs `also` in the same transaction (see RunWriter.write). */
  write(events: NewEvent[], also?: (tx: Store) => Promise<void>): Promise<void>;
  /** The database clock. */
  now(): number;
}

/**
 * A `rateLimit` option as a list, each use checked (units a positive number); `path` names the option in errors.
 *
 * @example rateUses({ name: 'openai', units: 0 }, 'step(ask).rateLimit') // ValidationError at step(ask).rateLimit.units
 */
export function rateUses(option: RateLimitUse | RateLimitUse[] | undefined, path: string): RateLimitUse[] {
  if (option === undefined) return [];
  const uses = Array.isArray(option) ? option : [option];
  uses.forEach((use, i) => {
    const at = `${path}${Array.isArray(option) ? `[${i}]` : ''}`;
    if (typeof use?.name !== 'string' || use.name.length === 0)
      throw new ValidationError(`${at}.name`, 'must name a limit');
    if (use.units !== undefined && !(typeof use.units === 'number' && Number.isFinite(use.units) && use.units > 0))
      throw new ValidationError(`${at}.units`, `must be a positive number (got ${JSON.stringify(use.units)})`);
    if (use.charge !== undefined && typeof use.charge !== 'function')
      throw new ValidationError(`${at}.charge`, 'must be a function of the output');
  });
  return uses;
}

/** The reason a run view shows while a step waits for a limit. */
export function rateReason(name: string, key: string, retryAt: number): string {
  return `rate limit ${key ? `${name}:${key}` : name} — next slot ${new Date(retryAt).toISOString()}`;
}

/**
 * Takes the step's limits before attempt `attempt`, or throws a Suspension until the slowest one
 * has room (journaled: `step.rate_waiting`), after which the next pass asks again. Each ask is
 * journaled (`step.rate_requested`) in the transaction that charges the buckets, and its answer
 * kept in the store under `<run>:<generation>:<seq>#<attempt>:<round>`: a pass that finds an ask without its
 * wait (a crash in between) asks again under the same id and gets the same answer, never a second
 * charge. Returns the buckets taken (keys resolved), for a later charge or deferral.
 */
export async function takeRate(
  host: RateHost,
  seq: Seq,
  name: string,
  attempt: number,
  uses: RateLimitUse[],
): Promise<RateUse[]> {
  const events = host.history.entries.get(seq)?.events ?? [];
  const ofAttempt = (type: string) =>
    events.filter((e) => e.type === type && (e.data as { attempt: number }).attempt === attempt);
  const asked = ofAttempt(RUN_EVENT.stepRateRequested).at(-1)?.data as { round: number } | undefined;
  const waited = ofAttempt(RUN_EVENT.stepRateWaiting).at(-1)?.data as { round: number; retryAt: number } | undefined;
  let round = asked?.round ?? 1;
  if (asked && waited?.round === asked.round) {
    if (waited.retryAt > host.now()) throw new Suspension(waited.retryAt);
    round = asked.round + 1;
  }
  let taken: RateUse[] = [];
  let result: RateTakeResult | undefined;
  let refused: string | undefined;
  await host.write([{ type: RUN_EVENT.stepRateRequested, data: { seq, name, attempt, round } }], async (tx) => {
    try {
      taken = await resolveUses(tx, host.history.input, name, uses);
    } catch (error) {
      // a key the input lacks fails the step, not the write: the ask is journaled, nothing is charged
      refused = (error as Error).message;
      return;
    }
    // a generation (continueAsNew) numbers its calls from 1 again: its asks are its own
    const takeId = `${host.runId}:${host.history.generation}:${seq}#${attempt}:${round}`;
    result = await tx.rateTake({ takeId, uses: taken });
  });
  if (refused !== undefined) throw new TerminalError(refused);
  if (!result || result.ok) {
    // the take committed, the step's start not yet: a crash here must neither lose the take nor charge it twice
    crashPoint('rate:afterTake');
    return taken;
  }
  if (result.retryAt === null) throw new TerminalError(`step(${name}).rateLimit: ${result.refused}`);
  const reason = rateReason(result.name, result.key, result.retryAt);
  await host.write([
    {
      type: RUN_EVENT.stepRateWaiting,
      data: { seq, name, attempt, round, limit: result.name, key: result.key, retryAt: result.retryAt, reason },
    },
  ]);
  throw new Suspension(result.retryAt);
}

/** Each use's bucket: its own key, else its limit's, resolved against the run's input ('' for a limit without keys). */
async function resolveUses(tx: Store, input: unknown, step: string, uses: RateLimitUse[]): Promise<RateUse[]> {
  const out: RateUse[] = [];
  for (const [i, use] of uses.entries()) {
    const at = `step(${step}).rateLimit${uses.length > 1 ? `[${i}]` : ''}`;
    const limit = await tx.rateLimitGet({ name: use.name });
    if (!limit) throw new ValidationError(`${at}.name`, `no rate limit named '${use.name}'`);
    const key = use.key ?? limit.key;
    out.push({ name: use.name, key: key ? resolveKey(key, input, `${at}.key`) : '', units: use.units ?? 1 });
  }
  return out;
}

/**
 * A step's limits for attempt `attempt` (none: nothing asked): `takeRate`, and a limit that can never have room
 * (a key its input lacks, more units than the limit) fails the step for good, journaled.
 */
export async function takeStepRates(
  host: RateHost,
  seq: Seq,
  name: string,
  attempt: number,
  uses: RateLimitUse[],
): Promise<RateUse[]> {
  if (uses.length === 0) return [];
  try {
    return await takeRate(host, seq, name, attempt, uses);
  } catch (error) {
    if (!(error instanceof TerminalError)) throw error;
    await host.write([
      { type: RUN_EVENT.stepFailed, data: { seq, name, attempt, ...failureData(error), retryAt: null } },
    ]);
    throw error;
  }
}

/** What a call really used past what it took (`rateExtra`), charged with its completion and journaled. */
export async function chargeStepRates(
  host: RateHost,
  seq: Seq,
  name: string,
  attempt: number,
  extra: RateUse[],
): Promise<void> {
  if (extra.length === 0) return;
  await host.write([{ type: RUN_EVENT.stepRateCharged, data: { seq, name, attempt, charged: extra } }], async (tx) => {
    for (const e of extra) await tx.rateCharge(e);
  });
}
