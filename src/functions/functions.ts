import type { Engine } from '../engine.js';
import { ConflictError, NotFoundError } from '../errors.js';
import type { Store } from '../storage/store.js';
import { FUNCTION_WORKFLOW, functionWorkflow, type FunctionInput } from './executor.js';
import { checkFunctionName, FunctionRegistry } from './registry.js';

export { FUNCTION_WORKFLOW, type FunctionInput } from './executor.js';
export type { FunctionInfo, FunctionRegistration } from './registry.js';

/**
 * Durable functions over HTTP: the registry of function endpoints and the executor that runs them (registered
 * with `engine`). A run of a function is a run like any other: `engine.runs` lists, views and waits for it.
 *
 * @example
 * const functions = new Functions(engine, store, { allow: ['127.0.0.1'] });
 * await functions.registry.register({ name: 'onboard', url: 'http://127.0.0.1:9000/' });
 * const { runId } = await functions.start('onboard', { user: 42 });
 */
export class Functions {
  readonly registry: FunctionRegistry;
  /** The code workflow every function runs as: a `function` step of a stored workflow starts it as a child. */
  readonly workflow;

  constructor(
    private readonly engine: Engine,
    store: Store,
    options: { allow: string[] },
  ) {
    this.registry = new FunctionRegistry(store, engine.journal);
    this.workflow = functionWorkflow({ registry: this.registry, allow: options.allow });
    engine.register(this.workflow);
  }

  /**
   * Starts a run of the function's newest version; with `id`, keyed: a second start of that id starts nothing and
   * answers that run (ConflictError when the id names a run of something else).
   */
  async start(
    name: string,
    input: unknown,
    options: { id?: string } = {},
  ): Promise<{ runId: string; function: string; version: string }> {
    const run = await this.input(name, input);
    const handle = await this.engine.start(this.workflow, run, options.id ? { id: options.id } : {});
    const view = await handle.view();
    const started = view.input as FunctionInput | null;
    // a keyed start answers the run of that id: it must be a run of this function, not of another or a workflow
    if (view.workflow !== FUNCTION_WORKFLOW || started?.function !== name)
      throw new ConflictError(`run ${handle.id} exists and is not a run of function ${name}`);
    return { runId: handle.id, function: started.function, version: started.version };
  }

  /** A run's input: the function and its newest version; NotFoundError when it is not registered. */
  async input(name: string, input: unknown): Promise<FunctionInput> {
    checkFunctionName(name, 'function');
    const fn = await this.registry.get(name);
    if (!fn) throw new NotFoundError(`function ${name} not found`);
    return { function: name, version: fn.version, input: input ?? null };
  }
}
