/** A named rate limit as the API answers it (GET /limits/{name}). */
export interface LimitRecord {
  name: string;
  /** Units per period. */
  limit: number;
  period_ms: number;
  /** An expression over the run's input (`input.user_id`) or a constant: one bucket per key; null: one bucket. */
  key: string | null;
  created_at: string;
  updated_at: string;
}

/** What POST /limits takes: `period` in ms or as '1s', '1m', '1h' (1 s to 30 days). */
export interface LimitDefinition {
  name: string;
  limit: number;
  period: number | string;
  key?: string | null;
}
