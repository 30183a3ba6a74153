/** Exponential backoff: `baseMs × factor^(attempt − 1)`, capped at `maxMs`, then ± `jitter` (a fraction). */
export interface Backoff {
  baseMs: number;
  factor: number;
  maxMs: number;
  jitter: number;
}

export const defaultBackoff: Backoff = { baseMs: 1000, factor: 2, maxMs: 5 * 60_000, jitter: 0.2 };

/**
 * The delay before attempt `attempt + 1`, after `attempt` failures. Jitter spreads retries of
 * tasks that failed together (an outage) so they do not return together.
 *
 * @example backoffDelay(3, { baseMs: 1000, factor: 2, maxMs: 60_000, jitter: 0.2 }) // 3200…4800
 */
export function backoffDelay(attempt: number, backoff: Backoff, random = Math.random): number {
  const raw = Math.min(backoff.maxMs, backoff.baseMs * backoff.factor ** Math.max(0, attempt - 1));
  return Math.max(0, Math.round(raw * (1 + backoff.jitter * (2 * random() - 1))));
}
