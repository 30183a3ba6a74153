import type { GroupLocks } from '../../journal/group-commit.js';
import type { SlotWaiter, Store } from '../../storage/store.js';

/**
 * A concurrency key's state (limits.ts): a small projection row `ordering` (the limit, the runs holding a slot, the
 * fairness counters, how many wait per group) and the line of runs waiting, one store row each (`slotWaiter*`), so a
 * start, an end and a grant cost the same however many wait.
 */

/** One limit a run takes a slot of. `quiet`: an ordering key's (its wait shows no reason). */
export interface Claim {
  slot: string;
  limit: number;
  onLimit?: 'queue' | 'cancel_in_progress' | 'drop_newest';
  group?: string;
  quiet?: boolean;
}

/** A run waiting for a slot: what it takes next once let in (`rest`), and when its first pass may begin. */
export interface Waiter {
  run: string;
  priority: number;
  group?: string;
  rest: Claim[];
  notBefore?: number;
  /** Its version tag, when its start gave it (its pass queued without reading the run). */
  tag?: string;
  quiet?: boolean;
}

/** A key's slots: the limit in force (the newest start's), the runs holding one, and how many wait. */
export interface Slots {
  limit: number;
  held: string[];
  /** Runs cancelled by a `cancel_in_progress` start, not ended yet: not cancelled twice. */
  cancelling: string[];
  /** Fairness: the grant count at which each waiting group was last let in. */
  served: Record<string, number>;
  grants: number;
  /** Runs waiting, by group (`lineKey`); their rows are the key's line in the store. */
  lines: Record<string, number>;
  /** The lowest and highest places in line given: a run at the head goes before `first`, one at the end after `last`. */
  first: number;
  last: number;
  /** Waiting runs of a state written before lines were rows, not moved yet. */
  inline?: Waiter[];
}

/** A group's key in `lines`: '' for the runs of none, `=<group>` for a group's. */
const lineKey = (group: string | null | undefined): string => (group == null ? '' : `=${group}`);
const groupOf = (key: string): string | null => (key === '' ? null : key.slice(1));

/** A stored state; one written before limits (`{ active, waiting: [run ids] }`) reads as an ordering key's. */
export function normal(value: unknown): Slots {
  const v = (value ?? {}) as Partial<Omit<Slots, 'inline'>> & { active?: string | null; waiting?: unknown[] };
  const inline = (v.waiting ?? []).map((w) =>
    typeof w === 'string' ? { run: w, priority: 0, rest: [], quiet: true } : (w as Waiter),
  );
  return {
    limit: v.limit ?? 1,
    held: v.held ?? (v.active ? [v.active] : []),
    cancelling: v.cancelling ?? [],
    served: v.served ?? {},
    grants: v.grants ?? 0,
    lines: v.lines ?? {},
    first: v.first ?? 0,
    last: v.last ?? 0,
    ...(inline.length > 0 ? { inline } : {}),
  };
}

/** How many runs wait for the key. */
export function waits(slots: Slots): number {
  let n = slots.inline?.length ?? 0;
  for (const count of Object.values(slots.lines)) n += count;
  return n;
}

/** A key a transaction locked: the state it wrote, or the lock's answer not read yet. */
interface Locked {
  slots?: Slots;
  found?: { state: unknown };
}

const locked = new WeakMap<Store, Map<string, Locked>>();

function lockedBy(tx: Store): Map<string, Locked> {
  const keys = locked.get(tx) ?? new Map<string, Locked>();
  locked.set(tx, keys);
  return keys;
}

/**
 * Locks `slots` to the end of `tx` (`slotLock`, in the order given), one statement, those `tx` locked before left out;
 * `lockKey` then reads each from the answer. A group commit takes every key of its batch's keyed starts and ends so
 * (GroupLocks), sorted: one round trip for the batch, not one per start and end.
 */
export async function lockKeys(tx: Store, slots: string[]): Promise<void> {
  const mine = lockedBy(tx);
  const fresh = slots.filter((slot) => !mine.has(slot));
  if (fresh.length === 0) return;
  for (const { slot, state } of await tx.slotLock({ slots: fresh })) mine.set(slot, { found: { state } });
}

/** The keys of `claims`, for a group commit to lock ahead of the write that takes or gives back their slots. */
export function keyLocks(claims: readonly Claim[]): GroupLocks {
  return { keys: claims.map((c) => c.slot), take: lockKeys };
}

/**
 * Locks the key to the end of `tx` and returns its state, old inline line moved to rows: the lock's answer, or for a
 * key `tx` locked before (not locked again), the state `tx` wrote.
 */
export async function lockKey(tx: Store, slot: string): Promise<Slots> {
  if (!lockedBy(tx).has(slot)) await lockKeys(tx, [slot]);
  const mine = lockedBy(tx).get(slot)!;
  if (mine.slots) return copy(mine.slots);
  const { found } = mine;
  delete mine.found;
  const slots = normal(found ? found.state : (await tx.slotGet({ slots: [slot] }))[0]?.state);
  for (const w of slots.inline ?? []) {
    slots.last += 1;
    await enter(tx, slot, slots, w, slots.last);
  }
  delete slots.inline;
  return slots;
}

/**
 * A state a caller may change, the one `tx` wrote kept as it was: its lists and maps copied, their values are
 * strings and numbers (a state kept has no old inline line, see `write`). Every start and end of a batch under a
 * shared key after its first takes one.
 */
function copy(s: Slots): Slots {
  return { ...s, held: [...s.held], cancelling: [...s.cancelling], served: { ...s.served }, lines: { ...s.lines } };
}

/** Writes the state of a key `tx` locked. */
export async function write(tx: Store, slot: string, slots: Slots): Promise<void> {
  // an old inline line not moved yet (a drop_newest start read the key) is kept as it was stored
  const { inline, ...value } = slots;
  await tx.slotPut({ slot, state: inline ? { ...value, waiting: inline } : value });
  // no caller changes a state after writing it: kept as it is, copied if the key is locked again
  lockedBy(tx).set(slot, inline ? {} : { slots });
}

/** Reads the states of `slots` that have one (not locked: as last committed). */
export async function readStates(store: Store, slots: string[]): Promise<Map<string, Slots>> {
  const rows = await store.slotGet({ slots });
  return new Map(rows.map((r) => [r.slot, normal(r.state)]));
}

/** Puts `w` in the key's line at `seq`. */
export async function enter(tx: Store, slot: string, slots: Slots, w: Waiter, seq: number): Promise<void> {
  const data = {
    rest: w.rest,
    ...(w.notBefore === undefined ? {} : { notBefore: w.notBefore }),
    ...(w.tag === undefined ? {} : { tag: w.tag }),
    ...(w.quiet ? { quiet: true } : {}),
  };
  await tx.slotWaiterAdd({ slot, runId: w.run, priority: w.priority, seq, group: w.group ?? null, data });
  const g = lineKey(w.group);
  slots.lines[g] = (slots.lines[g] ?? 0) + 1;
}

/** Takes runs out of the key's line (those in it), counts kept. */
export async function leaveLine(tx: Store, slot: string, slots: Slots, runIds: string[]): Promise<Waiter[]> {
  if (waits(slots) === 0 || runIds.length === 0) return [];
  const gone = await tx.slotWaiterDelete({ slot, runIds });
  for (const w of gone) {
    const g = lineKey(w.group);
    slots.lines[g] = (slots.lines[g] ?? 1) - 1;
    if (slots.lines[g]! <= 0) delete slots.lines[g];
  }
  return gone.map(waiterOf);
}

export function waiterOf(row: SlotWaiter): Waiter {
  const data = (row.data ?? {}) as { rest?: Claim[]; notBefore?: number; tag?: string; quiet?: boolean };
  return {
    run: row.runId,
    priority: row.priority,
    rest: data.rest ?? [],
    ...(row.group === null ? {} : { group: row.group }),
    ...(data.notBefore === undefined ? {} : { notBefore: data.notBefore }),
    ...(data.tag === undefined ? {} : { tag: data.tag }),
    ...(data.quiet ? { quiet: true } : {}),
  };
}

/** Where a run waits in front of the first of its `ahead` runs still in line (in place order); null: at the end. */
export async function placeAhead(
  tx: Store,
  slot: string,
  slots: Slots,
  ahead: readonly string[],
): Promise<number | null> {
  if (ahead.length === 0 || waits(slots) === 0) return null;
  const line = (await tx.slotWaiterList({ slot, limit: 1_000_000 })).sort((a, b) => a.seq - b.seq);
  const at = line.findIndex((w) => ahead.includes(w.runId));
  if (at < 0) return null;
  const seq = at === 0 ? line[0]!.seq - 1 : (line[at - 1]!.seq + line[at]!.seq) / 2;
  slots.first = Math.min(slots.first, seq);
  return seq;
}

/**
 * Lets waiting runs into the free slots: the highest priority first, in place order within one; with groups
 * (`fairBy`), the group let in longest ago (or never) first, so groups take turns whatever their number of waiters.
 * A grant reads the head of the line and the head of each group let in before the head's: a few rows, not the line.
 */
export async function takeFree(tx: Store, slot: string, slots: Slots): Promise<Waiter[]> {
  const out: Waiter[] = [];
  const servedOf = (group: string | null) => (group === null ? -1 : (slots.served[group] ?? -1));
  while (slots.held.length < slots.limit && waits(slots) > 0) {
    const [top] = await tx.slotWaiterList({ slot, limit: 1 });
    if (!top) {
      slots.lines = {};
      break;
    }
    let best = top;
    let bestServed = servedOf(top.group);
    for (const g of Object.keys(slots.lines)) {
      const group = groupOf(g);
      const served = servedOf(group);
      if (group === top.group || served > bestServed) continue;
      const [head] = await tx.slotWaiterList({ slot, group, limit: 1 });
      if (!head || head.priority !== top.priority) continue;
      if (served < bestServed || head.seq < best.seq) [best, bestServed] = [head, served];
    }
    await leaveLine(tx, slot, slots, [best.runId]);
    slots.held.push(best.runId);
    slots.grants += 1;
    if (best.group !== null) slots.served[best.group] = slots.grants;
    out.push(waiterOf(best));
  }
  if (out.length > 0)
    for (const g of Object.keys(slots.served)) if (!(lineKey(g) in slots.lines)) delete slots.served[g];
  return out;
}

/** The runs in the key's line, next first (up to `max`). */
export async function lineOf(store: Store, slot: string, slots: Slots, max = 100_000): Promise<Waiter[]> {
  const rows = waits(slots) === 0 ? [] : await store.slotWaiterList({ slot, limit: max });
  return [...(slots.inline ?? []), ...rows.map(waiterOf)];
}
