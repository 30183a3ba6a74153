import type { Journal } from '../journal/journal.js';
import type { Store } from '../storage/store.js';
import { RUN_EVENT } from './events.js';

/** The runs of one ordering key: the one whose turn it is, and those waiting, in start order. */
interface Turn {
  active: string | null;
  waiting: string[];
}

const TURNS = 'ordering';

/**
 * Runs of one ordering key take turns: the first becomes active, later ones wait in start order
 * until the active one ends (`releaseTurn`). The append to the key's stream locks it (the stream's
 * row) for the rest of the transaction, so concurrent starts queue up one after another. True: the
 * run's turn is now.
 */
export async function admitTurn(journal: Journal, tx: Store, key: string, runId: string): Promise<boolean> {
  await journal.append(`ordering:${key}`, [{ type: RUN_EVENT.runQueued, data: { runId } }], { tx });
  const turn = ((await tx.projectionGet({ name: TURNS, key })) as Turn | undefined) ?? { active: null, waiting: [] };
  const admitted = turn.active === null;
  if (admitted) turn.active = runId;
  else turn.waiting.push(runId);
  await tx.projectionPut({ name: TURNS, key, value: turn });
  return admitted;
}

/**
 * A run of the key ended: returns the run whose turn it is now (its pass is the caller's to
 * queue), if any; one that ended while still waiting (cancelled) leaves the line.
 */
export async function releaseTurn(journal: Journal, tx: Store, key: string, runId: string): Promise<string | null> {
  await journal.append(`ordering:${key}`, [{ type: RUN_EVENT.runReleased, data: { runId } }], { tx });
  const turn = (await tx.projectionGet({ name: TURNS, key })) as Turn | undefined;
  if (!turn) return null;
  if (turn.active !== runId) {
    turn.waiting = turn.waiting.filter((id) => id !== runId);
    await tx.projectionPut({ name: TURNS, key, value: turn });
    return null;
  }
  turn.active = turn.waiting.shift() ?? null;
  await tx.projectionPut({ name: TURNS, key, value: turn });
  return turn.active;
}

/** A run waiting for its ordering key's turn is not run, even when a signal wakes it; its turn starts a pass. */
export async function hasTurn(store: Store, key: string, runId: string): Promise<boolean> {
  const turn = (await store.projectionGet({ name: TURNS, key })) as Turn | undefined;
  return turn?.active === runId;
}
