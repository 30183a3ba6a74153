import type { ErrorRule } from './schema.js';

/** What an error rule can match: the HTTP status the error carried, and whether it was a timeout. */
export function errorClass(error: unknown): { status: number | null; timedOut: boolean } {
  const status = (error as { status?: unknown } | null)?.status;
  const name = error instanceof Error ? error.name : '';
  return {
    status: typeof status === 'number' ? status : null,
    timedOut: name === 'StepTimedOutError' || name === 'TimeoutError',
  };
}

/** Whether `rule` matches `error`: a rule with neither `status` nor `timed_out` matches any error. */
export function matches(rule: ErrorRule, error: unknown): boolean {
  const { status, timedOut } = errorClass(error);
  if (rule.timed_out) return timedOut;
  if (rule.status === undefined) return true;
  if (status === null) return false;
  if (typeof rule.status === 'number') return status === rule.status;
  if (rule.status === '4xx') return status >= 400 && status <= 499;
  if (rule.status === '5xx') return status >= 500 && status <= 599;
  return status >= rule.status[0] && status <= rule.status[1];
}

/**
 * The failure state an error takes the execution to: the first matching rule of the step, then of
 * the workflow, then `fallback` (the workflow's `states.failed`), else null.
 *
 * @example failureState(error422, [[{ status: '4xx', state: 'FAILED_CONTENT_VALIDATION' }]], 'FAILED') // 'FAILED_CONTENT_VALIDATION'
 */
export function failureState(
  error: unknown,
  rules: (ErrorRule[] | undefined)[],
  fallback: string | undefined,
): string | null {
  for (const list of rules) for (const rule of list ?? []) if (matches(rule, error)) return rule.state;
  return fallback ?? null;
}
