import { TerminalError } from '../../errors.js';
import type { Model, ModelMessage } from '../../runtime/model.js';
import type { RetryPolicy, WorkflowContext } from '../../runtime/workflow.js';
import { checkUrl, resolveChecked } from '../actions/http-send.js';
import type { LeafStep } from '../schema.js';
import { type GenerateConfig, type StoredModel, storedSpelling } from './generate-config.js';
import { finish, type StoredRun } from './run.js';

/** A model a stored `generate` step names, its key read from the secrets: what the process's `models` builds. */
export type ModelReference =
  | { kind: 'offline' }
  | { kind: 'openai-compatible'; url: string; model: string; apiKey?: string; continuation?: 'prefix' | 'restart' };

/**
 * Builds the model a stored step names. The providers live above workflows/ (src/models/), so the process plugs
 * them in where it is assembled (app/): `storedWorkflow({ …, models: stepModel })`.
 */
export type StepModels = (reference: ModelReference) => Model;

type GenerateStep = Extract<LeafStep, { type: 'generate' }>;

/**
 * A stored `generate` step: `ctx.generate` under the step's id, so it has the code face's journal, streaming
 * (`GET /runs/{execution}/stream`), resume after a crash and replay. The output is the Generation in the stored
 * workflows' spelling (`{ text, finish_reason, usage: { input_tokens, … } }`). A config that did not render, a
 * key secret that is gone, or a process with no model provider fails the step for good, journaled under its id.
 */
export async function generateStep(
  run: StoredRun,
  ctx: WorkflowContext,
  step: GenerateStep,
  rendered: unknown,
  problem: unknown,
  retry: RetryPolicy,
): Promise<unknown> {
  const fail = (error: unknown) => finish(run, ctx, step, () => Promise.reject(error));
  if (problem !== null) return fail(problem);
  const config = rendered as GenerateConfig;
  let model: Model | Model[];
  try {
    const chain = Array.isArray(config.model) ? config.model : [config.model];
    const models = chain.map((m) => modelOf(run, step.id, m));
    model = Array.isArray(config.model) ? models : models[0]!;
  } catch (error) {
    return fail(error);
  }
  const messages: ModelMessage[] = config.messages.map((m) => ({
    role: m.role,
    // a template that is one whole value (`{{trigger.order}}`) renders to it: the model reads it as JSON
    content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content),
  }));
  const generation = await ctx.generate(step.id, {
    model,
    messages,
    retry,
    ...(config.max_tokens === undefined ? {} : { maxTokens: config.max_tokens }),
    ...(step.timeout_seconds ? { timeout: step.timeout_seconds * 1000 } : {}),
    ...(step.label ? { label: step.label } : {}),
  });
  return storedSpelling(generation);
}

function modelOf(run: StoredRun, stepId: string, stored: StoredModel): Model {
  const models = run.options.models;
  if (!models)
    throw new TerminalError(
      `generate step ${stepId}: this process has no model provider (storedWorkflow's models option; app/ plugs it in)`,
    );
  if (stored === 'offline') return models({ kind: 'offline' });
  const name = stored.api_key_secret;
  const apiKey = name === undefined ? undefined : run.secrets[name];
  if (name !== undefined && apiKey === undefined)
    throw new TerminalError(`generate step ${stepId}: model.api_key_secret names no stored secret '${name}'`);
  const model = models({
    kind: 'openai-compatible',
    url: stored.url,
    model: stored.model,
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(stored.continuation ? { continuation: stored.continuation } : {}),
  });
  return guarded(model, stored.url, run.options.allow);
}

/**
 * The model behind the SSRF guard of `http_request`: before each attempt its host is resolved and every address
 * checked (private, loopback and metadata addresses refused unless RUNLEDGER_HTTP_ALLOW opens them). The AI SDK then
 * connects by name, so a host that resolves differently a moment later is not caught (the request itself is not pinned).
 */
function guarded(model: Model, url: string, allow: string[]): Model {
  return {
    id: model.id,
    continuation: model.continuation,
    async *stream(request) {
      const parsed = new URL(url);
      const attempt = { method: 'POST', url: parsed, headers: new Map(), body: undefined };
      try {
        checkUrl(parsed);
        await resolveChecked(attempt, { idempotencyKey: '', signal: request.signal, allow }, request.signal, () =>
          request.signal.reason instanceof Error ? request.signal.reason : new Error(String(request.signal.reason)),
        );
      } catch (error) {
        if (error instanceof TerminalError)
          throw new TerminalError(error.message.replace(/^http_request refused/, `model ${model.id}: refused`));
        throw error;
      }
      yield* model.stream(request);
    },
  };
}
