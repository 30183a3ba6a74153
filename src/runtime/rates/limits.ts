import { toMs, type Duration } from '../../duration.js';
import { NotFoundError, ValidationError } from '../../errors.js';
import type { RateLimitRow, Store } from '../../storage/store.js';
import { checkKey, checkPeriod } from '../flow-check.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$/;
const LIMIT_MAX = 1_000_000_000;

/** A named rate limit: `limit` units per `period`, one bucket per key when `key` is set. */
export interface RateLimitDefinition {
  name: string;
  limit: number;
  period: Duration;
  /** An expression over the run's input (`input.user_id`) or a constant: one bucket per key. */
  key?: string | null;
}

/** A named rate limit as stored; `periodMs` is its period in ms. */
export type RateLimitInfo = RateLimitRow;

/** A limit's name: 1-100 letters, digits or _.:- starting with a letter or digit. */
export function checkLimitName(name: unknown, path = 'name'): string {
  if (typeof name !== 'string' || !NAME.test(name))
    throw new ValidationError(path, `must be 1-100 letters, digits or _.:- (got ${JSON.stringify(name)})`);
  return name;
}

/**
 * Named rate limits, shared by every process on the database (`engine.limits`). Steps take them
 * (`ctx.step(name, fn, { rateLimit: { name: 'openai', units: 1 } })`) and wait durably for room.
 * Defining a limit again changes it at once, for every process, keeping its buckets' state.
 *
 * @example
 * await engine.limits.define({ name: 'openai', limit: 500, period: '1m' });
 * await engine.limits.define({ name: 'per-user', limit: 10, period: '1s', key: 'input.user_id' });
 */
export class RateLimits {
  constructor(private readonly store: Store) {}

  /** Creates or changes a limit; a ValidationError names the bad field (limit, period, key, name). */
  async define(definition: RateLimitDefinition): Promise<RateLimitInfo> {
    const name = checkLimitName(definition.name);
    const { limit } = definition;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > LIMIT_MAX)
      throw new ValidationError(
        'limit',
        `must be a whole number from 1 to ${LIMIT_MAX} (got ${JSON.stringify(limit)})`,
      );
    const periodMs = toMs(checkPeriod(definition.period, 'period'), 'period');
    const key = definition.key === undefined || definition.key === null ? null : checkKey(definition.key, 'key');
    return this.store.rateLimitPut({ name, limit, periodMs, key });
  }

  /** One limit; NotFoundError when there is none of that name. */
  async get(name: string): Promise<RateLimitInfo> {
    const found = await this.store.rateLimitGet({ name });
    if (!found) throw new NotFoundError(`no rate limit named '${name}'`);
    return found;
  }

  list(): Promise<RateLimitInfo[]> {
    return this.store.rateLimitList();
  }

  /** Deletes a limit and its buckets; steps that name it fail at their next take. NotFoundError when there is none. */
  async delete(name: string): Promise<void> {
    if (!(await this.store.rateLimitDelete({ name }))) throw new NotFoundError(`no rate limit named '${name}'`);
  }
}
