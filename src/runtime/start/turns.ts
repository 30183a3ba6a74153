import type { Journal } from '../../journal/journal.js';
import type { Store } from '../../storage/store.js';
import { admit, holdsAll, release, type LimitHost } from './limits.js';

/**
 * Runs of one ordering key take turns: the limit `{ key, limit: 1, scope: 'global' }` of `limits.ts`, seen alone.
 * The first run becomes active, later ones wait in start order until the active one ends (`releaseTurn`); `ahead`:
 * the run waits in front of the first of these runs still waiting (the active run keeps its turn). True: the run's
 * turn is now.
 *
 * @example if (await admitTurn(journal, tx, 'customer-1', runId)) await queuePass(tx, runId);
 */
export async function admitTurn(
  journal: Journal,
  tx: Store,
  key: string,
  runId: string,
  ahead: readonly string[] = [],
): Promise<boolean> {
  const host: LimitHost = { journal, begin: async () => {}, wake: async () => {} };
  const admission = await admit(host, tx, { id: runId, priority: 0, ahead }, [{ slot: key, limit: 1, quiet: true }]);
  return admission.admitted;
}

/**
 * A run of the key ended: returns the run whose turn it is now (its pass is the caller's to queue), if any; one that
 * ended while still waiting (cancelled) leaves the line.
 *
 * @example const next = await releaseTurn(journal, tx, 'customer-1', runId);
 */
export async function releaseTurn(journal: Journal, tx: Store, key: string, runId: string): Promise<string | null> {
  let next: string | null = null;
  const host: LimitHost = {
    journal,
    begin: async (_tx, id) => {
      next = id;
    },
    wake: async () => {},
  };
  await release(host, tx, runId, [{ slot: key, limit: 1, quiet: true }]);
  return next;
}

/** A run waiting for its ordering key's turn is not run, even when a signal wakes it; its turn starts a pass. */
export function hasTurn(store: Store, key: string, runId: string): Promise<boolean> {
  return holdsAll(store, runId, [{ slot: key, limit: 1 }]);
}
