import type { Engine } from '../engine.js';
import { storedModel } from '../models/stored.js';
import { Definitions } from '../workflows/definitions.js';
import { workflowService, type WorkflowService, type WorkflowServiceOptions } from '../workflows/service.js';

/**
 * Adds stored workflows to `engine`: registers the interpreter (so this process runs executions
 * when it runs workers) and returns the services the API and CLI call.
 *
 * @example
 * const service = storedWorkflows(engine, { secretKey: await loadSecretKey({ dataDir: '.' }) });
 * const wf = await service.definitions.create(definition);
 * await service.executions.execute(wf.id, { trigger_data: { name: 'Ada' } });
 */
export function storedWorkflows(engine: Engine, options: WorkflowServiceOptions): WorkflowService {
  return workflowService(engine, engine.store, { models: storedModel, ...options });
}

/** The stored workflow definitions alone, to read them (the CLI's database source): no secrets, no executions. */
export function workflowDefinitions(engine: Engine): Definitions {
  return new Definitions(engine.store, engine.journal);
}
