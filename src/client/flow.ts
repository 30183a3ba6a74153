/** A concurrency key with runs in or waiting, as GET /flow answers it. */
export interface FlowKeyRecord {
  /** The slot runs are counted under: `<workflow>:<key value>`, or the key of a global limit. */
  key: string;
  limit: number;
  in_use: number;
  waiting: number;
  active_runs: string[];
  /** Next first. */
  waiting_runs: string[];
  oldest_waiting_since: string | null;
}

/** The limits in force (GET /flow): concurrency keys in use, and the named rate limits. */
export interface FlowRecord {
  concurrency: FlowKeyRecord[];
  /** More keys were in use than the answer holds. */
  truncated: boolean;
  rate_limits: { name: string; limit: number; period_ms: number; key: string | null }[];
}
