import { ConflictError } from '../../errors.js';
import type { Journal } from '../../journal/journal.js';
import type { Store } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import { runStream } from '../pass/history.js';
import {
  type Claim,
  enter,
  leaveLine,
  lineOf,
  lockKey,
  placeAhead,
  readStates,
  type Slots,
  takeFree,
  type Waiter,
  write,
} from './line.js';
import type { RunFlow } from './run-flow.js';

export type { Claim } from './line.js';

/**
 * Keyed concurrency: each key (a slot) lets `limit` runs in at once; a run holds a slot of every limit it names from
 * its start until it ends (a sleeping run keeps it). A key's state is its lock row's (`slotLock`, which locks the key
 * for the rest of the transaction) and its line of waiting runs (line.ts): no event (the runs' own streams journal
 * what they went through; the key's stream `ordering:<key>` keeps its refusals, `run.dropped`), and starts and ends of
 * one key go one after another across processes. A run takes its keys in one order (sorted), so two runs never wait
 * for each other; it waits on the first full one and goes on taking the next ones when it is let in. An ordering key
 * is the limit `{ key, limit: 1, scope: 'global' }`, its wait shown as before (pending, no reason).
 */

/** A start refused by a full `drop_newest` limit (409): `concurrency user:42 — 1 of 1 in use`. */
export class LimitReachedError extends ConflictError {
  override name = 'LimitReachedError';
}

/** What a key's start, end or grant needs of the runtime. */
export interface LimitHost {
  journal: Journal;
  /** Queues the first pass of a run that now holds every slot it needs (at `notBefore` when later). */
  begin(tx: Store, runId: string, notBefore: number | null, pass?: { tag: string; priority: number }): Promise<void>;
  /** Wakes a run now: a cancel request was journaled for it. */
  wake(tx: Store, runId: string): Promise<void>;
}

/** A run taking slots: its priority orders it among those waiting; `ahead`: runs it waits in front of. */
export interface Runner {
  id: string;
  priority: number;
  /** Its version tag: its first pass, once let in, is queued without reading the run. */
  tag?: string;
  notBefore?: number;
  ahead?: readonly string[];
}

export type Admission = { admitted: true } | { admitted: false; waitingFor: string; quiet: boolean };

/** The stream of a key's slots. */
export function slotStream(slot: string): string {
  return `ordering:${slot}`;
}

/**
 * The limits a run takes, in the one order every run takes them: its ordering key's (limit 1) and its flow's, by key.
 *
 * @example claimsOf(history.flow, history.orderingKey).map((c) => c.slot) // ['checkout:42', 'openai']
 */
export function claimsOf(flow: RunFlow | null, orderingKey: string | null): Claim[] {
  const claims = new Map<string, Claim>();
  if (orderingKey !== null) claims.set(orderingKey, { slot: orderingKey, limit: 1, quiet: true });
  for (const c of flow?.concurrency ?? [])
    if (!claims.has(c.slot))
      claims.set(c.slot, {
        slot: c.slot,
        limit: c.limit,
        ...(c.onLimit && c.onLimit !== 'queue' ? { onLimit: c.onLimit } : {}),
        ...(c.group === undefined ? {} : { group: c.group }),
      });
  return [...claims.values()].sort((a, b) => (a.slot < b.slot ? -1 : a.slot > b.slot ? 1 : 0));
}

/**
 * Runs known here to hold every slot they need, by journal: a run keeps its slots until it ends, so a pass of one need
 * not read its keys again (`holdsAll`). Noted once the admitting transaction commits, forgotten as its end commits;
 * the oldest let go past `HOLDING_MAX` (a run that ended in another process stays until then, harmlessly: its pass
 * stops at its terminal event before asking).
 */
const holding = new WeakMap<Journal, Set<string>>();
const HOLDING_MAX = 10_000;

function holdingOf(journal: Journal): Set<string> {
  const set = holding.get(journal) ?? new Set<string>();
  holding.set(journal, set);
  return set;
}

/** Notes that run `runId` holds all its slots, letting the oldest go past `HOLDING_MAX`. */
function remember(journal: Journal, runId: string): void {
  const set = holdingOf(journal);
  set.add(runId);
  if (set.size > HOLDING_MAX) set.delete(set.values().next().value!);
}

/** Notes, once `tx` commits, that run `runId` holds all its slots. */
export function noteHolding(journal: Journal, tx: Store, runId: string): void {
  tx.onCommit(() => remember(journal, runId));
}

/** Why a run waits for `slot`, in a person's words. */
function reason(slot: string, slots: Slots): string {
  return `concurrency ${slot} — ${slots.held.length} of ${slots.limit} in use`;
}

/**
 * A starting run's `drop_newest` claims, taken first, in `tx`: a full one refuses the run (its reason returned),
 * journaled on the key's stream (`run.dropped`), the slots taken before it given back, nothing else written. Null:
 * the run holds a slot of each.
 */
export async function takeDroppable(
  host: LimitHost,
  tx: Store,
  runId: string,
  claims: Claim[],
  outlive = false,
): Promise<string | null> {
  const taken: Claim[] = [];
  for (const claim of claims.filter((c) => c.onLimit === 'drop_newest')) {
    const dropped = await tryTake(host.journal, tx, runId, claim);
    if (dropped !== null) {
      // `outlive`: the caller's transaction rolls back with the refusal (a start in it throws); it is journaled anew
      if (outlive) tx.onRollback(() => void journalDropped(host.journal, claim.slot, runId, dropped));
      await release(host, tx, runId, taken);
      return dropped;
    }
    taken.push(claim);
  }
  return null;
}

/**
 * Takes a slot of every other claim (sorted, see `claimsOf`) for a starting run, in `tx`. A full limit: the run waits in
 * line (`cancel_in_progress`: at its head, the oldest run of the key cancelled as the system), and an end of the key
 * (`release`) lets it in later.
 */
export function admit(host: LimitHost, tx: Store, run: Runner, claims: Claim[]): Promise<Admission> {
  return acquire(
    host,
    tx,
    run,
    claims.filter((c) => c.onLimit !== 'drop_newest'),
    false,
  );
}

/** A refusal journaled on its own, after the transaction that had it rolled back (a failure here is logged only). */
async function journalDropped(journal: Journal, slot: string, runId: string, why: string): Promise<void> {
  const event = { type: RUN_EVENT.runDropped, data: { runId, reason: why } };
  await journal.append(slotStream(slot), [event]).catch((error: unknown) => {
    console.warn(`runledger: the refusal of run ${runId} by ${slot} was not journaled: ${String(error)}`);
  });
}

/** A `drop_newest` claim: the key locked, a full one refuses the run (`run.dropped` journaled on the key's stream). */
async function tryTake(journal: Journal, tx: Store, runId: string, claim: Claim): Promise<string | null> {
  const slots = await lockKey(tx, claim.slot);
  slots.limit = claim.limit;
  if (slots.held.length >= slots.limit) {
    const why = reason(claim.slot, slots);
    await journal.append(slotStream(claim.slot), [{ type: RUN_EVENT.runDropped, data: { runId, reason: why } }], {
      tx,
    });
    return why;
  }
  slots.held.push(runId);
  await write(tx, claim.slot, slots);
  return null;
}

/** Takes the claims one after another; waits on the first full one. `going`: a run let in, taking its next ones. */
async function acquire(host: LimitHost, tx: Store, run: Runner, claims: Claim[], going: boolean): Promise<Admission> {
  for (let i = 0; i < claims.length; i++) {
    const claim = claims[i]!;
    const slots = await lockKey(tx, claim.slot);
    // the limit in force is the newest start's: a raised one lets waiting runs in at once
    const changed = !going && slots.limit !== claim.limit;
    if (!going) slots.limit = claim.limit;
    const granted = going ? [] : await takeFree(tx, claim.slot, slots);
    // those still waiting are told the new "n of m" (after this run's own place is known)
    const told = changed ? (await lineOf(tx, claim.slot, slots)).filter((w) => !w.quiet).map((w) => w.run) : [];
    if (slots.held.length < slots.limit) {
      slots.held.push(run.id);
      await write(tx, claim.slot, slots);
      await retell(host, tx, told, reason(claim.slot, slots));
      for (const w of granted) await letIn(host, tx, claim.slot, w);
      continue;
    }
    const waiter: Waiter = {
      run: run.id,
      priority: run.priority,
      rest: claims.slice(i + 1),
      ...(claim.group === undefined ? {} : { group: claim.group }),
      ...(run.notBefore === undefined ? {} : { notBefore: run.notBefore }),
      ...(run.tag === undefined ? {} : { tag: run.tag }),
      ...(claim.quiet ? { quiet: true } : {}),
    };
    const why = reason(claim.slot, slots);
    let seq: number;
    if (claim.onLimit === 'cancel_in_progress' && !going) {
      const victim =
        slots.held.find((r) => !slots.cancelling.includes(r)) ??
        (await lineOf(tx, claim.slot, slots, slots.cancelling.length + 1)).find(
          (w) => !slots.cancelling.includes(w.run),
        )?.run;
      if (victim !== undefined) {
        slots.cancelling.push(victim);
        const data = { reason: `${why}: cancelled for the newer run ${run.id}`, by: 'system' };
        await host.journal.append(runStream(victim), [{ type: RUN_EVENT.runCancelRequested, data }], { tx });
        await host.wake(tx, victim);
      }
      slots.first -= 1;
      seq = slots.first;
    } else {
      const ahead = await placeAhead(tx, claim.slot, slots, run.ahead ?? []);
      if (ahead === null) slots.last += 1;
      seq = ahead ?? slots.last;
    }
    await enter(tx, claim.slot, slots, waiter, seq);
    await write(tx, claim.slot, slots);
    await retell(host, tx, told, why);
    for (const w of granted) await letIn(host, tx, claim.slot, w);
    return { admitted: false, waitingFor: why, quiet: claim.quiet === true };
  }
  return { admitted: true };
}

/** Runs waiting for a key whose limit changed: their reason as it is now (`run.admitted`, still waiting), one append. */
async function retell(host: LimitHost, tx: Store, runs: string[], why: string): Promise<void> {
  if (runs.length === 0) return;
  const data = { slot: null, waitingFor: why };
  const appends = runs.map((id) => ({ streamId: runStream(id), events: [{ type: RUN_EVENT.runAdmitted, data }] }));
  await host.journal.appendMany(appends, { tx });
}

/** A waiter let into `slot`: it takes its next slots; holding all, its first pass is queued. Journaled on the run. */
async function letIn(host: LimitHost, tx: Store, slot: string, w: Waiter): Promise<void> {
  const run = {
    id: w.run,
    priority: w.priority,
    ...(w.notBefore === undefined ? {} : { notBefore: w.notBefore }),
    ...(w.tag === undefined ? {} : { tag: w.tag }),
  };
  const next = w.rest.length > 0 ? await acquire(host, tx, run, w.rest, true) : ({ admitted: true } as const);
  if (next.admitted) {
    await host.begin(
      tx,
      w.run,
      w.notBefore ?? null,
      w.tag === undefined ? undefined : { tag: w.tag, priority: w.priority },
    );
    noteHolding(host.journal, tx, w.run);
  }
  const shown = next.admitted ? !w.quiet : !next.quiet;
  if (shown) {
    const data = { slot, waitingFor: next.admitted ? null : next.waitingFor };
    await host.journal.append(runStream(w.run), [{ type: RUN_EVENT.runAdmitted, data }], { tx });
  }
}

/** Run `runId` leaves `slot` (its slot freed, or its place in line), in `tx`: returns the waiting runs let in. */
async function leave(host: LimitHost, tx: Store, runId: string, slot: string): Promise<Waiter[]> {
  const slots = await lockKey(tx, slot);
  const held = slots.held.includes(runId);
  slots.held = slots.held.filter((r) => r !== runId);
  slots.cancelling = slots.cancelling.filter((r) => r !== runId);
  if (!held) await leaveLine(tx, slot, slots, [runId]);
  const granted = await takeFree(tx, slot, slots);
  await write(tx, slot, slots);
  return granted;
}

/**
 * In the transaction that ends run `runId`: it leaves each of its keys, in the one order, and then the runs waiting
 * there are let in (their passes queued by `host.begin`): they take their next keys once this run holds none, so the
 * keys of this transaction are locked in order as far as it can.
 */
export async function release(host: LimitHost, tx: Store, runId: string, claims: Claim[]): Promise<void> {
  const granted: Array<{ slot: string; waiter: Waiter }> = [];
  for (const claim of claims)
    for (const waiter of await leave(host, tx, runId, claim.slot)) granted.push({ slot: claim.slot, waiter });
  for (const { slot, waiter } of granted) await letIn(host, tx, slot, waiter);
  tx.onCommit(() => holdingOf(host.journal).delete(runId));
}

/**
 * Whether run `runId` holds a slot of each claim: a run still waiting is not run, even when a signal wakes it. With
 * `journal`: a run this process saw let in (or found holding) is not read again.
 */
export async function holdsAll(store: Store, runId: string, claims: Claim[], journal?: Journal): Promise<boolean> {
  if (claims.length === 0) return true;
  if (journal && holding.get(journal)?.has(runId)) return true;
  const states = await readStates(
    store,
    claims.map((c) => c.slot),
  );
  const all = claims.every((c) => states.get(c.slot)?.held.includes(runId) === true);
  if (all && journal) remember(journal, runId);
  return all;
}

/** A key's slots as people read them: the limit, the runs in, and those waiting in line. */
export async function readSlots(
  store: Store,
  slot: string,
): Promise<{ limit: number; held: string[]; waiting: string[] } | undefined> {
  const slots = (await readStates(store, [slot])).get(slot);
  if (slots === undefined) return undefined;
  const waiting = (await lineOf(store, slot, slots)).map((w) => w.run);
  return { limit: slots.limit, held: slots.held, waiting };
}
