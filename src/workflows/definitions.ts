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

  /** Replaces the definition as a new version; executions already started keep theirs. */
  async update(id: string, input: unknown): Promise<StoredWorkflow> {
    const definition = parseDefinition(input);
    await this.store.transaction(async (tx) => {
      const current = await this.getIn(tx, id);
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

  /** Every saved version of a workflow, oldest first, from its journal (the last one is current unless deleted). */
  async versions(id: string): Promise<Array<{ version: number; definition: Definition; saved_at: string }>> {
    await this.get(id);
    const events = await this.store.eventReadStream({ streamId: stream(id), limit: 10_000 });
    return events
      .filter((e) => e.type === 'workflow.saved')
      .map((e) => {
        const { version, definition } = e.data as { version: number; definition: Definition };
        return { version, definition, saved_at: new Date(e.timestamp).toISOString() };
      });
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
