import { Journal } from '../journal/journal.js';
import { openStore } from '../storage/open.js';
import type { Store } from '../storage/store.js';
import type { Backend } from './backends.js';

/** A store and its journal: one process, as a test of what processes share stands for it. */
export interface Process {
  store: Store;
  journal: Journal;
}

/** Two processes on one fresh database of `backend`, each journal given `setup` (its projections) before anything is appended. */
export async function twoProcesses(
  backend: Backend,
  setup: (journal: Journal) => void = () => {},
): Promise<[Process, Process]> {
  const database = await backend.create();
  const open = async (): Promise<Process> => {
    const store = await openStore(database);
    const journal = new Journal(store, { maxEventBytes: 1 << 20, maxEventsPerAppend: 1000 });
    setup(journal);
    return { store, journal };
  };
  return [await open(), await open()];
}
