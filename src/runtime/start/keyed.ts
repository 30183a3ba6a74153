import { createHash } from 'node:crypto';
import { ConflictError } from '../../errors.js';
import type { Journal } from '../../journal/journal.js';
import { checkName } from '../../json.js';
import { RUN_EVENT } from '../events.js';
import type { NewEvent, Store, StoredEvent } from '../../storage/store.js';

/** The key streams each run took (projection, by run id): retention deletes them with the run. */
export const RUN_KEYS = 'run-keys';

/** The stream of one key: its first event names the run the key started. */
export function keyStream(scope: string, key: string): string {
  return `${scope}:${key}`;
}

/**
 * A deterministic run id for a key, for starts that want the same id on every try (a code
 * workflow's run started by a rule, `POST /runs` with an Idempotency-Key).
 *
 * @example runIdFor('sch_01J…:2025-01-01T00:00:00.000Z') // 'run_k3…' (32 characters after the prefix)
 */
export function runIdFor(key: string): string {
  return hashedId('run', key);
}

/** `<prefix>_` + 32 characters of the SHA-256 of `key`: the same key, the same id. */
export function hashedId(prefix: string, key: string, encoding: 'base64url' | 'hex' = 'base64url'): string {
  return `${prefix}_${createHash('sha256').update(key).digest(encoding).slice(0, 32)}`;
}

export interface KeyedStart {
  /** What the key is unique within (`execution-key:wf_01J…`, `agent-event`): the key stream is `<scope>:<key>`. */
  scope: string;
  key: string;
  /** Start in the caller's transaction: the run and its key exist only if that commits. */
  tx?: Store;
  /**
   * Inside the transaction, before anything is written: the id of the run the key names, and the
   * event that takes the key (default `{ type: 'run.keyed', data: { run_id } }`). Throwing here
   * leaves the transaction as it was.
   */
  name(tx: Store): Promise<{ runId: string; event?: NewEvent }>;
  /** Starts (or joins) the run, in the same transaction, once the key is taken. */
  begin(tx: Store, runId: string): Promise<void>;
  /** The run id a key event names (default: its `data.run_id`). */
  runOf?: (event: StoredEvent) => string;
}

export interface Keyed {
  runId: string;
  /** The key was taken before: nothing was written. */
  duplicate: boolean;
  /** What the key's first event carries. */
  data: unknown;
}

/**
 * The one keyed start: maps (scope, key) to a run id, idempotently. The first start appends the
 * key's first event (expected version 0) and begins the run in the same transaction; a repeat
 * reads that event and writes nothing; a concurrent start with the same key loses the append,
 * waits for the winner to commit and returns its run (on PostgreSQL the losing append undoes itself
 * in its own subtransaction, so a caller's `tx` stays usable). Inside a caller's transaction nothing exists
 * until that commits.
 *
 * @example
 * const { runId, duplicate } = await startKeyed(journal, store, { scope: 'orders', key: 'o-1', name: async () => ({ runId: newId('run') }), begin: (tx, id) => runtime.start(wf, input, { id, tx }).then(() => {}) });
 */
export async function startKeyed(journal: Journal, store: Store, p: KeyedStart): Promise<Keyed> {
  const stream = keyStream(p.scope, checkName('key', p.key, 1000));
  const runOf = p.runOf ?? ((e: StoredEvent) => (e.data as { run_id: string }).run_id);
  const found = async (tx?: Store): Promise<Keyed | undefined> => {
    const [first] = await journal.readStream(stream, { limit: 1, ...(tx ? { tx } : {}) });
    return first && { runId: runOf(first), duplicate: true, data: first.data };
  };
  const existing = await found(p.tx);
  if (existing) return existing;
  return (p.tx ?? store).transaction(async (tx) => {
    const { runId, event } = await p.name(tx);
    const taken = event ?? { type: RUN_EVENT.runKeyed, data: { run_id: runId } };
    try {
      await journal.append(stream, [taken], { tx, expectedVersion: 0 });
    } catch (error) {
      // a concurrent start with the same key committed first: its run is the one
      const winner = error instanceof ConflictError ? await found(tx) : undefined;
      if (winner === undefined) throw error;
      return winner;
    }
    const keys = ((await tx.projectionGet({ name: RUN_KEYS, key: runId })) as string[] | undefined) ?? [];
    await tx.projectionPut({ name: RUN_KEYS, key: runId, value: [...keys, stream] });
    await p.begin(tx, runId);
    return { runId, duplicate: false, data: taken.data };
  });
}

/** Deletes the key streams a run took, with the run (retention): a key is free again once its run is gone. */
export async function forgetKeys(tx: Store, runId: string): Promise<void> {
  const keys = (await tx.projectionGet({ name: RUN_KEYS, key: runId })) as string[] | undefined;
  if (!keys) return;
  await tx.streamDelete({ streamIds: keys });
  await tx.projectionDelete({ name: RUN_KEYS, key: runId });
}
