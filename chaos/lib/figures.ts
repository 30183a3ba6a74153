/** One scenario's outcome: the line the runner prints, and what it checks against the limits below. */
export interface Figures {
  /** Work accepted (a 2xx answer) that is gone, or done without its effect. */
  lost: number;
  /** Side effects made twice with different idempotency keys, or work stored twice. */
  duplicated: number;
  /** Side effects repeated with the same key: at-least-once delivery, allowed, reported. */
  sameKeyRepeats: number;
  /** Work accepted and not ended when the scenario's time ran out. */
  stuck: number;
  /** Work that ended failed although nothing in the scenario should fail it, or a rule nothing should break (a timer early, a lease taken from a live worker). */
  failed: number;
  /** Answers with a status ≥ 500 other than 503 (an outage should say 503 with Retry-After). */
  http5xx: number;
  /** Planted secrets found in plain text (database files, logs, responses). */
  leaked: number;
  /** Engine processes that exited without being told to (restarted by the scenario, like a supervisor would). */
  crashed: number;
  /** The longest time from a fault to the work it interrupted moving again; null: not measured. */
  recoverySeconds: number | null;
  /** Rules the journal checker (chaos/check.ts) found broken. */
  journal: number;
  /** Counts and observations that explain the figures. */
  notes: string[];
}

/** Figures that must be zero. */
export const MUST_BE_ZERO = [
  'lost',
  'duplicated',
  'stuck',
  'failed',
  'http5xx',
  'leaked',
  'crashed',
  'journal',
] as const;

/**
 * The target: a crashed process's work resumes within a few seconds. It was 12 s while the PostgreSQL outage
 * recoveries measured 5.2-10.9 s: the processes standing by for a subscription spent their connections on lease
 * attempts queued behind the holder's locks. With that gone, measured 3× each on 2 cores at load 10-21:
 * pg-stop-immediate 1.6-2.3 s, pg-restart-fast 1.2-2.3 s, pg-proxy 1.3-2.1 s.
 */
export const RECOVERY_LIMIT_SECONDS = 5;

/** Every scenario ends within this (the issue: ≤ 3 min each); the runner gives up on it a little later. */
export const SCENARIO_LIMIT_MS = 180_000;

export function emptyFigures(): Figures {
  return {
    lost: 0,
    duplicated: 0,
    sameKeyRepeats: 0,
    stuck: 0,
    failed: 0,
    http5xx: 0,
    leaked: 0,
    crashed: 0,
    recoverySeconds: null,
    journal: 0,
    notes: [],
  };
}

/** Why these figures fail the scenario (empty: they pass). */
export function failures(f: Figures): string[] {
  const out: string[] = MUST_BE_ZERO.filter((k) => f[k] !== 0).map((k) => `${k}=${f[k]}`);
  if (f.recoverySeconds !== null && f.recoverySeconds > RECOVERY_LIMIT_SECONDS)
    out.push(`recovery ${f.recoverySeconds}s > ${RECOVERY_LIMIT_SECONDS}s`);
  return out;
}

/** The scenario's one line of figures. */
export function figuresLine(f: Figures): string {
  const recovery = f.recoverySeconds === null ? '-' : `${f.recoverySeconds}s`;
  return `lost=${f.lost} dup=${f.duplicated} same-key=${f.sameKeyRepeats} stuck=${f.stuck} failed=${f.failed} 5xx=${f.http5xx} leaked=${f.leaked} crashed=${f.crashed} recovery=${recovery} journal=${f.journal}`;
}
