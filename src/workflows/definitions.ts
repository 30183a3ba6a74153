import { createHash } from 'node:crypto';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import type { Journal } from '../journal/journal.js';
import type { Store } from '../storage/store.js';
import { parseDefinition, type Definition } from './schema.js';
import { definitionRateLimits } from './flow.js';

/** A stored workflow as the API shows it: its definition, id and version. */
export interface StoredWorkflow extends Definition {
  id: string;
  version: number;
  created_at: string;
  updated_at: string;
}

const VIEW = 'workflow';
const stream = (id: string) => `workflow:${id}`;
/** The stream of a name's claims: `nameFree` appends one for every create and rename, in the save's transaction. */
const nameStream = (name: string) => `workflow-name:${createHash('sha256').update(name).digest('hex').slice(0, 32)}`;

/**
 * The id of the stored workflow named `name` now, or undefined: the last claim of the name, when
 * that workflow still has it (a rename or delete since leaves the claim behind). One read of a
 * stream and one of a view, however many workflows are stored.
 *
 * @example await storedWorkflowNamed(store, engine.journal, 'hello') // 'wf_01J…'
 */
export async function storedWorkflowNamed(store: Store, journal: Journal, name: string): Promise<string | undefined> {
  const [last] = await journal.readStream(nameStream(name), { backwards: true, limit: 1 });
  const id = (last?.data as { id?: unknown } | undefined)?.id;
  if (typeof id !== 'string') return undefined;
  const view = (await store.projectionGet({ name: VIEW, key: id })) as StoredWorkflow | undefined;
  return view?.name === name ? id : undefined;
}

/**
 * The current names of the stored workflows `ids`, by id; a deleted workflow has none.
 *
 * @example (await storedWorkflowNames(store, ['wf_01J…'])).get('wf_01J…') // 'hello'
 */
export async function storedWorkflowNames(store: Store, ids: Iterable<string>): Promise<Map<string, string>> {
  const unique = [...new Set(ids)];
  const views = await Promise.all(
    unique.map((id) => store.projectionGet({ name: VIEW, key: id }) as Promise<StoredWorkflow | undefined>),
  );
  return new Map(unique.flatMap((id, i) => (views[i] ? [[id, views[i].name] as const] : [])));
}

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
    /** The names of the stored secrets: a definition using any other is refused when saved. */
    private readonly secretNames?: () => Promise<Iterable<string>>,
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

  /** The id of the stored workflow named `name` now, or undefined (see `storedWorkflowNamed`). */
  named(name: string): Promise<string | undefined> {
    return storedWorkflowNamed(this.store, this.journal, name);
  }

  /** The current names of the stored workflows `ids`, by id; a deleted workflow has none. */
  names(ids: Iterable<string>): Promise<Map<string, string>> {
    return storedWorkflowNames(this.store, ids);
  }

  /** Validates and stores a new workflow (version 1). */
  async create(input: unknown): Promise<StoredWorkflow> {
    const definition = await this.check(input);
    const id = newId('wf');
    await this.store.transaction(async (tx) => {
      await this.nameFree(tx, definition.name, id);
      await this.journal.append(stream(id), [{ type: 'workflow.saved', data: { version: 1, definition } }], {
        tx,
        expectedVersion: 0,
      });
    });
    return this.get(id);
  }

  /** Replaces the definition as a new version; executions already started keep theirs. The same definition again makes no new version. */
  async update(id: string, input: unknown): Promise<StoredWorkflow> {
    const definition = await this.check(input);
    await this.store.transaction(async (tx) => {
      const current = await this.getIn(tx, id);
      if (current.name !== definition.name) await this.nameFree(tx, definition.name, id);
      const { id: _id, version: _v, created_at: _c, updated_at: _u, ...saved } = current;
      if (canonical(saved) === canonical(definition)) return;
      const [last] = await this.journal.readStream(stream(id), { backwards: true, limit: 1, tx });
      await this.journal.append(
        stream(id),
        [{ type: 'workflow.saved', data: { version: current.version + 1, definition } }],
        { tx, expectedVersion: last?.version ?? 0 },
      );
    });
    return this.get(id);
  }

  async delete(id: string): Promise<void> {
    await this.store.transaction(async (tx) => {
      await this.getIn(tx, id);
      await this.journal.append(stream(id), [{ type: 'workflow.deleted', data: {} }], { tx });
    });
  }

  /**
   * The id of the stored workflow `idOrName` names: every route takes a name wherever it takes an id.
   * An unknown `wf_` value comes back as it is, so the caller answers the 404 it always did (and an
   * execution of a deleted workflow stays reachable by its id).
   *
   * @example await definitions.resolve('hello') // 'wf_01J…'
   */
  async resolve(idOrName: string): Promise<string> {
    const isId = idOrName.startsWith('wf_');
    if (isId && (await this.store.projectionGet({ name: VIEW, key: idOrName }))) return idOrName;
    const named = await storedWorkflowNamed(this.store, this.journal, idOrName);
    if (named !== undefined) return named;
    if (isId) return idOrName;
    throw new NotFoundError(`workflow ${idOrName} not found`);
  }

  get(id: string): Promise<StoredWorkflow> {
    return this.getIn(this.store, id);
  }

  /** Every saved version of a workflow, oldest first, from its journal (the last one is current unless deleted). */
  async versions(id: string): Promise<Array<{ version: number; definition: Definition; saved_at: string }>> {
    await this.get(id);
    const events = await this.journal.readStream(stream(id), { limit: 10_000 });
    return events
      .filter((e) => e.type === 'workflow.saved')
      .map((e) => {
        const { version, definition } = e.data as { version: number; definition: Definition };
        return { version, definition, saved_at: new Date(e.timestamp).toISOString() };
      });
  }

  /**
   * By id: oldest first after `after`, or with `newestFirst` (the API's one list order; ids are ULIDs,
   * so id descending is creation order) before `before`. The cursor is the last id of the previous page.
   */
  async list(
    options: { limit?: number; after?: string; before?: string; newestFirst?: boolean } = {},
  ): Promise<StoredWorkflow[]> {
    const bounds = {
      ...(options.after ? { after: options.after } : {}),
      ...(options.before ? { before: options.before } : {}),
    };
    const rows = await this.store.projectionList({
      name: VIEW,
      limit: options.limit ?? 100,
      ...bounds,
      ...(options.newestFirst ? { backwards: true } : {}),
    });
    return rows.map((row) => row.value as StoredWorkflow);
  }

  /** The definition, parsed, using only stored secrets: every problem at once (shape, templates, references, secrets). */
  private async check(input: unknown): Promise<Definition> {
    const definition = parseDefinition(input, this.secretNames ? { secrets: new Set(await this.secretNames()) } : {});
    // a step naming no limit would fail at its first take: refused at save time instead
    const unknown = [];
    for (const [use, path] of definitionRateLimits(definition))
      if (!(await this.store.rateLimitGet({ name: use.name })))
        unknown.push({ path: `${path}.name`, message: `no rate limit named '${use.name}': define it first (/limits)` });
    if (unknown.length > 0) throw ValidationError.of(unknown);
    return definition;
  }

  /** A workflow's name is its handle (`runledger workflows apply` finds it by name): one workflow per name. */
  private async nameFree(tx: Store, name: string, id: string): Promise<void> {
    // first, the name's stream: a concurrent save of the same name waits here for this one to commit, then sees it
    await this.journal.append(nameStream(name), [{ type: 'workflow.name_claimed', data: { id } }], { tx });
    for (let after: string | undefined; ; ) {
      const rows = await tx.projectionList({ name: VIEW, limit: 500, ...(after ? { after } : {}) });
      const taken = rows.find((row) => (row.value as StoredWorkflow).name === name && row.key !== id);
      if (taken)
        throw new ConflictError(
          `name: a workflow named '${name}' exists (${taken.key}); update it (PUT /workflows/${taken.key}) or choose another name`,
        );
      if (rows.length < 500) return;
      after = rows.at(-1)!.key;
    }
  }

  private async getIn(store: Store, id: string): Promise<StoredWorkflow> {
    const view = (await store.projectionGet({ name: VIEW, key: id })) as StoredWorkflow | undefined;
    if (!view) throw new NotFoundError(`workflow ${id} not found`);
    return view;
  }
}

/** JSON with sorted keys: two definitions that differ only in key order are the same. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}
