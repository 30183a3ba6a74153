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

/** The keys of keyed concurrency limits: each key's lock row with its small state, and its line of waiting runs. */
export interface SlotStore {
  /**
   * Locks keys to the end of the transaction (PostgreSQL: their rows made, or bumped; SQLite: its write transaction
   * excludes every other already), in the order given, one statement: each key's state as it is now (the lock waits
   * for a transaction holding it, and answers the row it left), undefined for a key with none yet.
   */
  slotLock(p: { slots: string[] }): Promise<Array<{ slot: string; state: unknown }>>;
  /** Writes the state of a key the transaction locked (PostgreSQL: held, sent ahead of its next statement). */
  slotPut(p: { slot: string; state: unknown }): Promise<void>;
  /** The states of `slots` that have one (unlocked: as last committed). */
  slotGet(p: { slots: string[] }): Promise<Array<{ slot: string; state: unknown }>>;
  /** Keys with a state, in key order, after `after`. */
  slotList(p: { after?: string; limit: number }): Promise<Array<{ slot: string; state: unknown }>>;
  /** Puts a run in a key's line; one already there keeps its row. */
  slotWaiterAdd(p: SlotWaiter): Promise<void>;
  /** A key's line, next first, up to `limit` rows; with `group` (null: the runs of none), that group's alone. */
  slotWaiterList(p: { slot: string; group?: string | null; limit: number }): Promise<SlotWaiter[]>;
  /** Takes runs out of a key's line: the rows that were there. */
  slotWaiterDelete(p: { slot: string; runIds: string[] }): Promise<SlotWaiter[]>;
}
