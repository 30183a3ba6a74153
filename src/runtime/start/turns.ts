import type { Journal } from '../../journal/journal.js';
import { WrittenViews } from '../../journal/kept.js';
import type { Store } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';

/** The runs of one ordering key: the one whose turn it is, and those waiting, in start order. */
interface Turn {
  active: string | null;
  waiting: string[];
}

const TURNS = 'ordering';

/** Each journal's turns as of their key's stream version (`WrittenViews`): the key's next start or end takes one instead of reading it. */
const written = new WeakMap<Journal, WrittenViews<Turn>>();

function turnsOf(journal: Journal): WrittenViews<Turn> {
  let turns = written.get(journal);
  if (!turns) {
    turns = new WrittenViews<Turn>();
    written.set(journal, turns);
  }
  return turns;
}

/** Appends `type` to the key's stream (which locks it) and returns the key's turns as that append found them. */
async function lineUp(
  journal: Journal,
  tx: Store,
  key: string,
  type: string,
  runId: string,
): Promise<{ turn: Turn | undefined; version: number }> {
  const [event] = (await journal.append(`ordering:${key}`, [{ type, data: { runId } }], { tx })).events;
  const turn =
    turnsOf(journal).take(tx, key, event!.version - 1) ??
    ((await tx.projectionGet({ name: TURNS, key })) as Turn | undefined);
  return { turn, version: event!.version };
}

/** Writes the key's turns as of its stream's `version`. */
async function write(journal: Journal, tx: Store, key: string, version: number, turn: Turn): Promise<void> {
  await tx.projectionPut({ name: TURNS, key, value: turn });
  turnsOf(journal).wrote(tx, key, version, turn);
}

/**
 * Runs of one ordering key take turns: the first becomes active, later ones wait in start order
 * until the active one ends (`releaseTurn`). The append to the key's stream locks it (the stream's
 * row) for the rest of the transaction, so concurrent starts queue up one after another. `ahead`:
 * the run waits in front of the first of these runs still waiting (the active run keeps its turn).
 * True: the run's turn is now.
 */
export async function admitTurn(
  journal: Journal,
  tx: Store,
  key: string,
  runId: string,
  ahead: readonly string[] = [],
): Promise<boolean> {
  const lined = await lineUp(journal, tx, key, RUN_EVENT.runQueued, runId);
  const turn = lined.turn ?? { active: null, waiting: [] };
  const admitted = turn.active === null;
  const place = ahead.length ? turn.waiting.findIndex((id) => ahead.includes(id)) : -1;
  if (admitted) turn.active = runId;
  else if (place >= 0) turn.waiting.splice(place, 0, runId);
  else turn.waiting.push(runId);
  await write(journal, tx, key, lined.version, turn);
  return admitted;
}

/**
 * A run of the key ended: returns the run whose turn it is now (its pass is the caller's to
 * queue), if any; one that ended while still waiting (cancelled) leaves the line.
 */
export async function releaseTurn(journal: Journal, tx: Store, key: string, runId: string): Promise<string | null> {
  const { turn, version } = await lineUp(journal, tx, key, RUN_EVENT.runReleased, runId);
  if (!turn) return null;
  const ended = turn.active === runId;
  if (ended) turn.active = turn.waiting.shift() ?? null;
  else turn.waiting = turn.waiting.filter((id) => id !== runId);
  await write(journal, tx, key, version, turn);
  return ended ? turn.active : null;
}

/** A run waiting for its ordering key's turn is not run, even when a signal wakes it; its turn starts a pass. */
export async function hasTurn(store: Store, key: string, runId: string): Promise<boolean> {
  const turn = (await store.projectionGet({ name: TURNS, key })) as Turn | undefined;
  return turn?.active === runId;
}
