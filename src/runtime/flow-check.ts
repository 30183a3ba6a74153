import { toMs, type Duration } from '../duration.js';
import { ValidationError } from '../errors.js';
import { fieldOf } from './match.js';
import type { Batch, Budget, ConcurrencyLimit, Debounce, FlowOptions, Throttle } from './flow.js';

const PERIOD_MIN_MS = 1_000;
const PERIOD_MAX_MS = 30 * 24 * 3_600_000;
const EXPRESSION = /^input(\.[A-Za-z_$][\w$-]*)+$/;
const CONSTANT = /^[A-Za-z0-9_.:@/-]{1,200}$/;
const ON_LIMIT = ['queue', 'cancel_in_progress', 'drop_newest'] as const;

/**
 * A key as written: an expression over the input (`input.user_id`) or a constant (`openai`). Checked at save or
 * start time, so a definition with a bad key is refused before any run meets it.
 */
export function checkKey(key: unknown, path: string): string {
  if (typeof key !== 'string' || key.length === 0)
    throw new ValidationError(path, "must be an expression like 'input.user_id' or a constant like 'openai'");
  if (key === 'input' || key.startsWith('input.') || key.startsWith('input[')) {
    if (!EXPRESSION.test(key)) throw new ValidationError(path, `'${key}' is not a field of the input (input.user_id)`);
    return key;
  }
  if (!CONSTANT.test(key))
    throw new ValidationError(path, `a constant key is 1-200 letters, digits or _.:@/- (got ${JSON.stringify(key)})`);
  return key;
}

/**
 * The key a run falls under: the input's field the expression names (its text), or the constant. A run whose
 * input lacks the field is refused, never put under a shared key.
 *
 * @example resolveKey('input.user_id', { user_id: 42 }, 'concurrency[0].key') // '42'
 */
export function resolveKey(key: string, input: unknown, path: string): string {
  if (!key.startsWith('input.')) return key;
  const value = fieldOf(input, key.slice('input.'.length));
  if (value === undefined || value === null || value === '')
    throw new ValidationError(path, `'${key}' is not in the run's input: the run has no key to count it under`);
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (text.length > 200) throw new ValidationError(path, `'${key}' is ${text.length} characters, at most 200`);
  return text;
}

function count(value: unknown, path: string, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max)
    throw new ValidationError(path, `must be a whole number from 1 to ${max} (got ${JSON.stringify(value)})`);
  return value;
}

function positive(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
    throw new ValidationError(path, `must be a positive number (got ${JSON.stringify(value)})`);
  return value;
}

/** A period from 1 s to 30 days, as given. */
export function checkPeriod(value: unknown, path: string): Duration {
  const ms = toMs(value as Duration, path);
  if (ms < PERIOD_MIN_MS || ms > PERIOD_MAX_MS)
    throw new ValidationError(path, `must be from 1s to 30d (got ${JSON.stringify(value)})`);
  return value as Duration;
}

function object(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ValidationError(path, 'must be an object');
  return value as Record<string, unknown>;
}

function concurrency(value: unknown, path: string): ConcurrencyLimit[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > 10)
    throw new ValidationError(path, 'must be a list of 1 to 10 limits ({ key, limit })');
  return value.map((raw, i) => {
    const at = `${path}[${i}]`;
    const c = object(raw, at);
    if (c.onLimit !== undefined && !ON_LIMIT.includes(c.onLimit as (typeof ON_LIMIT)[number]))
      throw new ValidationError(`${at}.onLimit`, `must be one of ${ON_LIMIT.join(', ')}`);
    if (c.scope !== undefined && c.scope !== 'workflow' && c.scope !== 'global')
      throw new ValidationError(`${at}.scope`, "must be 'workflow' or 'global'");
    return {
      ...(c.key === undefined ? {} : { key: checkKey(c.key, `${at}.key`) }),
      limit: count(c.limit, `${at}.limit`, 1_000_000),
      ...(c.onLimit === undefined ? {} : { onLimit: c.onLimit as ConcurrencyLimit['onLimit'] }),
      ...(c.fairBy === undefined ? {} : { fairBy: checkKey(c.fairBy, `${at}.fairBy`) }),
      ...(c.scope === undefined ? {} : { scope: c.scope as ConcurrencyLimit['scope'] }),
    };
  });
}

function throttle(value: unknown, path: string): Throttle {
  const t = object(value, path);
  return {
    ...(t.key === undefined ? {} : { key: checkKey(t.key, `${path}.key`) }),
    limit: count(t.limit, `${path}.limit`, 1_000_000),
    period: checkPeriod(t.period, `${path}.period`),
  };
}

function debounce(value: unknown, path: string): Debounce {
  const d = object(value, path);
  if (d.mode !== undefined && d.mode !== 'last' && d.mode !== 'all')
    throw new ValidationError(`${path}.mode`, "must be 'last' or 'all'");
  const period = checkPeriod(d.period, `${path}.period`);
  const maxWait = d.maxWait === undefined ? undefined : checkPeriod(d.maxWait, `${path}.maxWait`);
  if (maxWait !== undefined && toMs(maxWait) < toMs(period))
    throw new ValidationError(`${path}.maxWait`, `must be at least the period (${String(period)})`);
  return {
    ...(d.key === undefined ? {} : { key: checkKey(d.key, `${path}.key`) }),
    period,
    ...(maxWait === undefined ? {} : { maxWait }),
    ...(d.mode === undefined ? {} : { mode: d.mode as Debounce['mode'] }),
  };
}

const BATCH_TIMEOUT_MAX_MS = 24 * 3_600_000;

function batch(value: unknown, path: string): Batch {
  const b = object(value, path);
  const key = b.key === undefined ? {} : { key: checkKey(b.key, `${path}.key`) };
  const maxSize = count(b.maxSize, `${path}.maxSize`, 10_000);
  const timeout = checkPeriod(b.timeout, `${path}.timeout`);
  if (toMs(timeout) > BATCH_TIMEOUT_MAX_MS)
    throw new ValidationError(`${path}.timeout`, `must be from 1s to 1d (got ${JSON.stringify(b.timeout)})`);
  if (b.into !== undefined && (typeof b.into !== 'string' || !/^[A-Za-z_]\w{0,63}$/.test(b.into)))
    throw new ValidationError(`${path}.into`, 'must be the name of a field of the input');
  return { ...key, maxSize, timeout, ...(b.into === undefined ? {} : { into: b.into as string }) };
}

/**
 * A batch with a debounce or a throttle is refused: a batch's run begins when it is full or its timeout passes, and a
 * debounce or throttle would move that start again (use concurrency to brake batched runs).
 */
export function checkBatchAlone(flow: FlowOptions, path = ''): void {
  if (flow.batch === undefined) return;
  for (const field of ['debounce', 'throttle'] as const)
    if (flow[field] !== undefined)
      throw new ValidationError(
        path ? `${path}.batch` : 'batch',
        `cannot be combined with ${field}: a batch's run begins when it is full or its timeout passes (use concurrency)`,
      );
}

function budget(value: unknown, path: string): Budget {
  const b = object(value, path);
  const out: Budget = {};
  if (b.tokens !== undefined) out.tokens = positive(b.tokens, `${path}.tokens`);
  if (b.cost !== undefined) out.cost = positive(b.cost, `${path}.cost`);
  if (b.toolCalls !== undefined) out.toolCalls = count(b.toolCalls, `${path}.toolCalls`, 1_000_000_000);
  if (b.steps !== undefined) out.steps = count(b.steps, `${path}.steps`, 1_000_000_000);
  if (b.wallTime !== undefined) out.wallTime = checkPeriod(b.wallTime, `${path}.wallTime`);
  if (b.onExceed !== undefined && b.onExceed !== 'fail' && b.onExceed !== 'approve')
    throw new ValidationError(`${path}.onExceed`, "must be 'fail' or 'approve'");
  if (b.onExceed !== undefined) out.onExceed = b.onExceed as Budget['onExceed'];
  if (Object.keys(out).filter((k) => k !== 'onExceed').length === 0)
    throw new ValidationError(path, 'names nothing to cap (tokens, cost, toolCalls, steps, wallTime)');
  return out;
}

/**
 * Flow options checked and normalised; a ValidationError names the field and the limit (`concurrency[1].limit:
 * must be a whole number from 1 to 1000000`). `path` prefixes every field (`''` for TypeScript options, `'flow'`
 * or the definition's field for stored workflows).
 *
 * @example checkFlow({ concurrency: [{ key: 'input.user_id', limit: 1 }] }) // the same, checked
 */
export function checkFlow(options: FlowOptions, path = ''): FlowOptions {
  const at = (field: string) => (path ? `${path}.${field}` : field);
  const out: FlowOptions = {};
  if (options.concurrency !== undefined) out.concurrency = concurrency(options.concurrency, at('concurrency'));
  if (options.priority !== undefined) {
    const p = options.priority;
    if (typeof p !== 'number' || !Number.isInteger(p) || p < -100 || p > 100)
      throw new ValidationError(at('priority'), `must be a whole number from -100 to 100 (got ${JSON.stringify(p)})`);
    out.priority = p;
  }
  if (options.throttle !== undefined) out.throttle = throttle(options.throttle, at('throttle'));
  if (options.debounce !== undefined) out.debounce = debounce(options.debounce, at('debounce'));
  if (options.batch !== undefined) out.batch = batch(options.batch, at('batch'));
  if (options.budget !== undefined) out.budget = budget(options.budget, at('budget'));
  checkBatchAlone(out, path);
  return out;
}
