import type { Journal } from '../../journal/journal.js';
import { WrittenViews } from '../../journal/kept.js';
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
  /** The version of the key's stream this state is as of. */
  version?: number;
  /** Waiting runs of a state written before lines were rows, not moved yet. */
  inline?: Waiter[];
}

export const SLOTS = 'ordering';
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
    ...(v.version === undefined ? {} : { version: v.version }),
    ...(inline.length > 0 ? { inline } : {}),
  };
}

/** How many runs wait for the key. */
export function waits(slots: Slots): number {
  let n = slots.inline?.length ?? 0;
  for (const count of Object.values(slots.lines)) n += count;
  return n;
}

/** Each journal's key states as of their stream's version: the key's next append takes one instead of reading it. */
const written = new WeakMap<Journal, WrittenViews<Slots>>();

function kept(journal: Journal): WrittenViews<Slots> {
  const views = written.get(journal) ?? new WrittenViews<Slots>();
  written.set(journal, views);
  return views;
}

/** The key's state as of `version - 1` (the append that locked it made `version`), its old inline line moved to rows. */
export async function readLocked(journal: Journal, tx: Store, slot: string, version: number): Promise<Slots> {
  const slots = kept(journal).take(tx, slot, version - 1) ?? normal(await tx.projectionGet({ name: SLOTS, key: slot }));
  for (const w of slots.inline ?? []) {
    slots.last += 1;
    await enter(tx, slot, slots, w, slots.last);
  }
  delete slots.inline;
  return slots;
}

export async function write(journal: Journal, tx: Store, slot: string, version: number, slots: Slots): Promise<void> {
  slots.version = version;
  // an old inline line not moved yet (a drop_newest start read the key) is kept as it was stored
  const { inline, ...value } = slots;
  await tx.projectionPut({ name: SLOTS, key: slot, value: inline ? { ...value, waiting: inline } : value });
  kept(journal).wrote(tx, slot, version, slots);
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
