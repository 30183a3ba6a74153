import { NotFoundError } from '../errors.js';
import { newId } from '../ids.js';
import type { Journal } from '../journal/journal.js';
import type { Store } from '../storage/store.js';
import { parseDefinition, type Definition } from './schema.js';

/** A stored workflow as the API shows it: its definition, id and version. */
export interface StoredWorkflow extends Definition {
  id: string;
  version: number;
  created_at: string;
  updated_at: string;
}

const VIEW = 'workflow';
const stream = (id: string) => `workflow:${id}`;

/**
 * Stored workflow definitions. Every save is an event in the workflow's stream (`workflow.saved`,
 * `workflow.deleted`); the current version is a projection of it, written in the same transaction.
 * One instance per journal (its constructor registers the projection).
 *
 * @example
 * const wf = await definitions.create({ name: 'hello', steps: [{ id: 'greet', type: 'log', config: { message: 'hi' } }] });
 */
export class Definitions {
  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
  ) {
    journal.project(['workflow.saved', 'workflow.deleted'], async (event, tx) => {
      const id = event.streamId.slice('workflow:'.length);
      if (event.type === 'workflow.deleted') return tx.projectionDelete({ name: VIEW, key: id });
      const { definition, version } = event.data as { definition: Definition; version: number };
      const before = (await tx.projectionGet({ name: VIEW, key: id })) as StoredWorkflow | undefined;
      const at = new Date(event.timestamp).toISOString();
      const view: StoredWorkflow = { id, version, ...definition, created_at: before?.created_at ?? at, updated_at: at };
      await tx.projectionPut({ name: VIEW, key: id, value: view });
    });
  }

  /** Validates and stores a new workflow (version 1). */
  async create(input: unknown): Promise<StoredWorkflow> {
    const definition = parseDefinition(input);
    const id = newId('wf');
    await this.journal.append(stream(id), [{ type: 'workflow.saved', data: { version: 1, definition } }], { expectedVersion: 0 });
    return this.get(id);
  }

  /** Replaces the definition as a new version; executions already started keep theirs. The same definition again makes no new version. */
  async update(id: string, input: unknown): Promise<StoredWorkflow> {
    const definition = parseDefinition(input);
    await this.store.transaction(async (tx) => {
      const current = await this.getIn(tx, id);
      const { id: _id, version: _v, created_at: _c, updated_at: _u, ...saved } = current;
      if (canonical(saved) === canonical(definition)) return;
      const [last] = await tx.eventReadStream({ streamId: stream(id), backwards: true, limit: 1 });
      await this.journal.append(stream(id), [{ type: 'workflow.saved', data: { version: current.version + 1, definition } }], { tx, expectedVersion: last?.version ?? 0 });
    });
    return this.get(id);
  }

  async delete(id: string): Promise<void> {
    await this.store.transaction(async (tx) => {
      await this.getIn(tx, id);
      await this.journal.append(stream(id), [{ type: 'workflow.deleted', data: {} }], { tx });
    });
  }

  get(id: string): Promise<StoredWorkflow> {
    return this.getIn(this.store, id);
  }

  /** Oldest first; `after` is the last id of the previous page. */
  async list(options: { limit?: number; after?: string } = {}): Promise<StoredWorkflow[]> {
    const rows = await this.store.projectionList({ name: VIEW, limit: options.limit ?? 100, ...(options.after ? { after: options.after } : {}) });
    return rows.map((row) => row.value as StoredWorkflow);
  }

  private async getIn(store: Store, id: string): Promise<StoredWorkflow> {
    const view = (await store.projectionGet({ name: VIEW, key: id })) as StoredWorkflow | undefined;
    if (!view) throw new NotFoundError(`workflow ${id} not found`);
    return view;
  }
}

/** JSON with sorted keys: two definitions that differ only in key order are the same. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b))) : v));
}
