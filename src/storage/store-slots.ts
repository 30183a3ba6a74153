/** A run waiting in the line of a concurrency key (`slot`): next in line is the highest `priority`, then lowest `seq`. */
export interface SlotWaiter {
  slot: string;
  runId: string;
  priority: number;
  seq: number;
  /** Its fairness group (fairBy); null: none. */
  group: string | null;
  /** What the run takes next once let in (JSON). */
  data: unknown;
}

/** The lines of keyed concurrency limits (runtime/start/limits.ts keeps each key's small state beside them). */
export interface SlotStore {
  /**
   * Locks keys to the end of the transaction (their rows bumped, made at 1), in the order given, one statement: each
   * key's new version, and its row of `projection` (its state) as the statement read it. That may be older than the
   * lock: on PostgreSQL, a transaction that held the lock and committed after the statement began is not seen.
   */
  slotLock(p: {
    slots: string[];
    projection: string;
  }): Promise<Array<{ slot: string; version: number; value: unknown }>>;
  /** Puts a run in a key's line; one already there keeps its row. */
  slotWaiterAdd(p: SlotWaiter): Promise<void>;
  /** A key's line, next first, up to `limit` rows; with `group` (null: the runs of none), that group's alone. */
  slotWaiterList(p: { slot: string; group?: string | null; limit: number }): Promise<SlotWaiter[]>;
  /** Takes runs out of a key's line: the rows that were there. */
  slotWaiterDelete(p: { slot: string; runIds: string[] }): Promise<SlotWaiter[]>;
}
