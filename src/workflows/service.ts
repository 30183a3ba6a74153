import { Functions } from '../functions/functions.js';
import type { Engine } from '../engine.js';
import type { Store } from '../storage/store.js';
import type { LogLine } from './actions/index.js';
import { Batches } from './batches.js';
import { Callbacks } from './callbacks.js';
import { cancelReasons } from './cancel-reason.js';
import { Definitions } from './definitions.js';
import { Executions, pruneExecution } from './executions.js';
import { childWorkflows } from './steps/child.js';
import type { StepModels } from './steps/generate.js';
import { executionAges } from './expiry.js';
import { storedWorkflow } from './interpreter.js';
import { Secrets } from './secrets.js';
import { Templates } from './templates.js';

/** Stored workflows on an engine: their definitions, executions and secrets. */
export interface WorkflowService {
  definitions: Definitions;
  executions: Executions;
  secrets: Secrets;
  callbacks: Callbacks;
  batches: Batches;
  templates: Templates;
  functions: Functions;
}

export interface WorkflowServiceOptions {
  /** The 32-byte key secrets are encrypted with (`loadSecretKey`). */
  secretKey: Buffer;
  /** Hosts and CIDRs `http_request` steps may reach although the SSRF guard refuses them. */
  allow?: string[];
  /** Where `log` steps write; default: nowhere. */
  log?: (line: LogLine) => void;
  /** This server's URL: `wait_for_callback` URLs start with it. Default: none (the URL is a path). */
  callbackBaseUrl?: string;
  /** What `generate` steps build their models with (src/models/storedModel); default: none, and such a step fails. */
  models?: StepModels;
}

/**
 * Adds stored workflows to `engine`, kept in its `store`: registers the interpreter (so this
 * process runs executions when it runs workers) and returns the services the API and CLI call.
 * The public face is `storedWorkflows(engine, options)` (app/workflows.ts), which hands it the store.
 */
export function workflowService(engine: Engine, store: Store, options: WorkflowServiceOptions): WorkflowService {
  const secrets = new Secrets(store, engine.journal, options.secretKey);
  const definitions = new Definitions(store, engine.journal, async () => (await secrets.list()).map((s) => s.name));
  const callbacks = new Callbacks(engine, options.secretKey, options.callbackBaseUrl);
  const cancels = cancelReasons(engine, store);
  const functions = new Functions(engine, store, { allow: options.allow ?? [] });
  const interpreter = storedWorkflow({
    functions: { workflow: functions.workflow, input: (name, input) => functions.input(name, input) },
    workflows: childWorkflows(definitions, (name) => engine.runtime.registered(name)),
    cancellation: (execution) => cancels.get(execution),
    secrets,
    ...(options.models ? { models: options.models } : {}),
    allow: options.allow ?? [],
    log: options.log ?? (() => {}),
    callbackUrl: (execution, step) => callbacks.url(execution, step),
  });
  engine.register(interpreter);
  engine.retention.onRunPruned(pruneExecution);
  engine.retention.withRunAges(executionAges());
  const executions = new Executions(engine, store, definitions, interpreter, cancels);
  const batches = new Batches(engine, store, definitions, executions);
  return { definitions, secrets, callbacks, executions, batches, templates: new Templates(definitions), functions };
}
