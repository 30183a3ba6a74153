import { matchPath, reject } from './http.js';

/** What a fault does to the work a POST starts: it ends `failed` with `error`, or never ends; its final callback is sent `callbackCopies` times. */
export interface JobFault {
  kind?: 'fail' | 'hang';
  error?: string;
  callbackCopies?: number;
}

/**
 * One fault rule (the format of `POST /_faults`; docs/mock-services.md has examples).
 * - `endpoint`: `"METHOD /path"`; a `{name}` or `*` segment matches any one segment, method `*` any method.
 * - `match`: only requests whose JSON body has these top-level fields with these values.
 * - `times`: how many matching requests it applies to (default 1), or `"always"`.
 * Effects (at least one):
 * - `status` (400–599): answered instead of the service, which does nothing; `retry_after` (seconds)
 *   adds a `Retry-After` header, `body` replaces the default error body.
 * - `delay_ms`: the answer comes this much later (real milliseconds, not scaled by speed). The
 *   service has already done the work, so a client that times out and retries with the same
 *   `Idempotency-Key` gets the first resource.
 * - `drop`: the service does the work, then the connection is closed without an answer.
 * - `job: "fail"` (with `error`) / `job: "hang"`: on a POST that starts work (session submit, layout
 *   proposal, render): that work ends `failed` with the message, or stays `processing` for ever.
 * - `callback_copies` (2–10): on such a POST, the final callback is POSTed that many times (a
 *   webhook sender's duplicate deliveries).
 * - `cancel: "async"` on a layout proposal's or render job's cancel (`POST …/cancel`): the cancel answers 202
 *   and the work is `cancelling` for `cancelling_polls` GETs of it (default 1) or `cancelling_ms` of service
 *   time (scaled by speed), then `cancelled`; `cancel: "never"` leaves it `cancelling` for ever (brief §8.1).
 */
export interface FaultRule {
  endpoint: string;
  match?: Record<string, unknown>;
  times?: number | 'always';
  status?: number;
  retry_after?: number;
  body?: unknown;
  delay_ms?: number;
  drop?: boolean;
  job?: 'fail' | 'hang';
  error?: string;
  callback_copies?: number;
  cancel?: 'async' | 'never';
  cancelling_polls?: number;
  cancelling_ms?: number;
}

/** A stored rule: its id, how many uses are left (`null`: always) and how many it had. */
export interface ActiveFault extends FaultRule {
  id: string;
  remaining: number | null;
  used: number;
}

const KEYS = new Set([
  'endpoint',
  'match',
  'times',
  'status',
  'retry_after',
  'body',
  'delay_ms',
  'drop',
  'job',
  'error',
  'callback_copies',
  'cancel',
  'cancelling_polls',
  'cancelling_ms',
]);

/** Checks one rule; a bad one is a 422 naming the field (`rules[2].status`). */
export function parseRule(value: unknown, at: string): FaultRule {
  const bad = (field: string, message: string) =>
    reject(422, 'invalid_fault', `${at}.${field}: ${message}`, `${at}.${field}`);
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw reject(422, 'invalid_fault', `${at} must be an object`, at);
  const rule = value as Record<string, unknown>;
  for (const key of Object.keys(rule))
    if (!KEYS.has(key)) throw bad(key, `unknown field (allowed: ${[...KEYS].join(', ')})`);
  if (typeof rule.endpoint !== 'string' || !/^(\*|GET|POST|PUT|DELETE) \/\S*$/.test(rule.endpoint))
    throw bad('endpoint', 'must be "METHOD /path", e.g. "POST /v1/layout/proposals" or "GET /v1/render/jobs/{id}"');
  if (rule.match !== undefined && (typeof rule.match !== 'object' || rule.match === null || Array.isArray(rule.match)))
    throw bad('match', 'must be an object of body fields');
  if (
    rule.times !== undefined &&
    rule.times !== 'always' &&
    !(Number.isInteger(rule.times) && (rule.times as number) >= 1 && (rule.times as number) <= 1_000_000)
  )
    throw bad('times', 'must be an integer from 1 to 1000000, or "always"');
  if (
    rule.status !== undefined &&
    !(Number.isInteger(rule.status) && (rule.status as number) >= 400 && (rule.status as number) <= 599)
  )
    throw bad('status', 'must be an integer from 400 to 599');
  if (
    rule.retry_after !== undefined &&
    !(Number.isInteger(rule.retry_after) && (rule.retry_after as number) >= 0 && (rule.retry_after as number) <= 3600)
  )
    throw bad('retry_after', 'must be an integer number of seconds from 0 to 3600');
  if (rule.retry_after !== undefined && rule.status === undefined) throw bad('retry_after', 'needs a status');
  if (rule.body !== undefined && rule.status === undefined) throw bad('body', 'needs a status');
  if (
    rule.delay_ms !== undefined &&
    !(Number.isInteger(rule.delay_ms) && (rule.delay_ms as number) >= 0 && (rule.delay_ms as number) <= 600_000)
  )
    throw bad('delay_ms', 'must be an integer from 0 to 600000');
  if (rule.drop !== undefined && typeof rule.drop !== 'boolean') throw bad('drop', 'must be a boolean');
  if (rule.job !== undefined && rule.job !== 'fail' && rule.job !== 'hang')
    throw bad('job', 'must be "fail" or "hang"');
  if (rule.job !== undefined && !rule.endpoint.startsWith('POST '))
    throw bad('job', 'applies to a POST that starts work');
  if (rule.error !== undefined && (typeof rule.error !== 'string' || rule.job !== 'fail'))
    throw bad('error', 'must be a string, with job "fail"');
  if (
    rule.callback_copies !== undefined &&
    !(
      Number.isInteger(rule.callback_copies) &&
      (rule.callback_copies as number) >= 2 &&
      (rule.callback_copies as number) <= 10
    )
  )
    throw bad('callback_copies', 'must be an integer from 2 to 10');
  if (rule.callback_copies !== undefined && !rule.endpoint.startsWith('POST '))
    throw bad('callback_copies', 'applies to a POST that starts work');
  cancelProblem(rule, bad);
  if (rule.status !== undefined && (rule.drop || rule.job || rule.callback_copies || rule.cancel))
    throw bad(
      'status',
      'a status answer does no work: it cannot be combined with drop, job, callback_copies or cancel',
    );
  if (
    rule.status === undefined &&
    rule.delay_ms === undefined &&
    !rule.drop &&
    rule.job === undefined &&
    rule.callback_copies === undefined &&
    rule.cancel === undefined
  )
    throw bad('status', 'a rule needs an effect: status, delay_ms, drop, job, callback_copies or cancel');
  return rule as unknown as FaultRule;
}

/** The checks of `cancel`, `cancelling_polls` and `cancelling_ms`. */
function cancelProblem(rule: Record<string, unknown>, bad: (field: string, message: string) => Error): void {
  if (rule.cancel !== undefined && rule.cancel !== 'async' && rule.cancel !== 'never')
    throw bad('cancel', 'must be "async" or "never"');
  if (rule.cancel !== undefined && !/^POST \S*\/cancel$/.test(rule.endpoint as string))
    throw bad(
      'cancel',
      'applies to a cancel: "POST /v1/render/jobs/{id}/cancel" or "POST /v1/layout/proposals/{id}/cancel"',
    );
  const count = (field: string, max: number, unit: string) => {
    const value = rule[field];
    if (value === undefined) return;
    if (
      !(Number.isInteger(value) && (value as number) >= (field === 'cancelling_ms' ? 0 : 1) && (value as number) <= max)
    )
      throw bad(field, `must be an integer number of ${unit} from ${field === 'cancelling_ms' ? 0 : 1} to ${max}`);
    if (rule.cancel !== 'async') throw bad(field, 'needs cancel "async"');
  };
  count('cancelling_polls', 1000, 'polls');
  count('cancelling_ms', 600_000, 'milliseconds');
  if (rule.cancelling_polls !== undefined && rule.cancelling_ms !== undefined)
    throw bad('cancelling_ms', 'use cancelling_polls or cancelling_ms, not both');
}

/** Accepts one rule, an array of rules, or `{ rules: [...] }`. */
export function parseRules(body: unknown): FaultRule[] {
  const list = Array.isArray(body)
    ? body
    : typeof body === 'object' && body !== null && Array.isArray((body as { rules?: unknown }).rules)
      ? (body as { rules: unknown[] }).rules
      : [body];
  if (list.length > 1000) throw reject(422, 'invalid_fault', 'at most 1000 rules', 'rules');
  return list.map((rule, i) => parseRule(rule, `rules[${i}]`));
}

/** The active rules, consumed in the order they were added; the first that matches a request applies. */
export class Faults {
  private rules: ActiveFault[] = [];
  private counter = 0;

  add(rules: FaultRule[]): ActiveFault[] {
    const added = rules.map((rule) => ({
      ...rule,
      id: `fault-${++this.counter}`,
      remaining: rule.times === 'always' ? null : (rule.times ?? 1),
      used: 0,
    }));
    this.rules.push(...added);
    return added;
  }

  clear(): void {
    this.rules = [];
  }

  list(): ActiveFault[] {
    return this.rules.map((rule) => ({ ...rule }));
  }

  /** The rule that applies to this request, counted as used (and dropped once used up). */
  take(method: string, path: string, body: unknown): ActiveFault | undefined {
    const index = this.rules.findIndex((rule) => applies(rule, method, path, body));
    if (index < 0) return undefined;
    const rule = this.rules[index]!;
    rule.used++;
    if (rule.remaining !== null && --rule.remaining === 0) this.rules.splice(index, 1);
    return { ...rule };
  }
}

function applies(rule: FaultRule, method: string, path: string, body: unknown): boolean {
  const space = rule.endpoint.indexOf(' ');
  const want = rule.endpoint.slice(0, space);
  if (want !== '*' && want !== method) return false;
  if (!matchPath(rule.endpoint.slice(space + 1), path)) return false;
  if (!rule.match) return true;
  if (typeof body !== 'object' || body === null) return false;
  return Object.entries(rule.match).every(
    ([field, value]) => JSON.stringify((body as Record<string, unknown>)[field]) === JSON.stringify(value),
  );
}
