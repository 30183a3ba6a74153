import { createHash } from 'node:crypto';
import { describeError, LeaseLostError, TerminalError, ValidationError } from '../../errors.js';
import { errorClassOf } from '../../observe/error-class.js';
import type { StoredEvent } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import {
  GenerationError,
  type GenerateOptions,
  type Generation,
  type GenerationUsage,
  type Model,
  type ModelMessage,
} from '../model.js';
import { failureData, rebuild, retryDelay, Suspension, type FailureData } from './calls.js';
import type { Seq } from './history.js';
import { chargeStepRates, rateDeferral, rateExtra, rateUses, takeStepRates } from './rate.js';
import type { StepHost } from './steps.js';
import { TextBatches } from './text-batches.js';

const ROLES = new Set(['system', 'user', 'assistant']);
const MAX_TOKENS = 1_000_000;
const MAX_CHAIN = 10;

/**
 * A model call as a step (`ctx.generate`). Journal: `step.started` (the model, prompt hash and limit as its input),
 * `step.resumed` when an earlier attempt left text (`at`: where this one takes it up), the streamed text in
 * `step.text` batches, then `step.completed` (the Generation) or `step.failed`. A completed call returns its
 * recorded answer and never calls the model again; an attempt after a crash or a failure continues from the
 * journaled text, so what a client read (only journaled text is delivered) is never repeated or skipped.
 */
export async function runGenerate(
  host: StepHost,
  seq: Seq,
  name: string,
  options: GenerateOptions,
): Promise<Generation> {
  const h = host.history;
  const completed = h.find(seq, RUN_EVENT.stepCompleted);
  if (completed) return (completed.data as { output: Generation }).output;
  const events = h.entries.get(seq)?.events ?? [];
  const lastFailure = events.filter((e) => e.type === RUN_EVENT.stepFailed).at(-1)?.data as
    | (FailureData & { retryAt: number | null })
    | undefined;
  if (lastFailure && lastFailure.retryAt === null) throw rebuild(lastFailure);
  const { messages, maxTokens } = checkOptions(name, options);
  host.checkLive();
  if (lastFailure?.retryAt && lastFailure.retryAt > host.now()) throw new Suspension(lastFailure.retryAt);

  const attempt = h.count(seq, RUN_EVENT.stepStarted) + 1;
  // a fallback chain: each failed attempt moves on to the next model (an attempt a crash cut keeps its model)
  const chain = Array.isArray(options.model) ? options.model : [options.model];
  const failures = h.count(seq, RUN_EVENT.stepFailed);
  const model = chain[Math.min(failures, chain.length - 1)]!;
  const next = failures + 1 < chain.length ? chain[failures + 1]! : null;
  const firstStart = h.find(seq, RUN_EVENT.stepStarted)?.timestamp ?? host.now();
  const prefix = journaledText(events);
  const promptHash = hashPrompt(model.id, maxTokens, messages);
  // the call's rate limits, taken before each attempt (no room suspends the pass) and charged by real tokens after
  const uses = rateUses(options.rateLimit, `generate(${name}).rateLimit`).map((use) => ({
    ...use,
    charge: use.charge ?? ((g: Generation) => tokensOf(g.usage)),
  }));
  const taken = await takeStepRates(host, seq, name, attempt, uses);
  const input = { model: model.id, promptHash, maxTokens: maxTokens ?? null, messages: messages.length };
  const started = { seq, name, attempt, input, ...(options.label ? { label: options.label } : {}) };
  const seam = { seq, name, attempt, at: prefix.length, mode: model.continuation };
  await host.write([
    { type: RUN_EVENT.stepStarted, data: started },
    ...(prefix.length > 0 ? [{ type: RUN_EVENT.stepResumed, data: seam }] : []),
  ]);
  const seen = host.observe(name, attempt);
  const text = new TextBatches(prefix.length, (at, piece) =>
    host.write([{ type: RUN_EVENT.stepText, data: { seq, name, attempt, at, text: piece } }]),
  );
  // what a model that starts over streamed again in place of the journaled text: the seam reads well when it matches
  let redone = '';
  try {
    const finish = await host.attempt(
      async (ctx) => {
        // a model that starts over streams the journaled text again first: it is dropped, not journaled twice
        let skip = model.continuation === 'restart' ? prefix.length : 0;
        const request = { messages, prefix, signal: ctx.signal, ...(maxTokens === undefined ? {} : { maxTokens }) };
        for await (const part of model.stream(request)) {
          if (part.type === 'finish') return part;
          const dropped = part.text.slice(0, skip);
          redone += dropped;
          skip -= dropped.length;
          text.add(part.text.slice(dropped.length));
        }
        throw new GenerationError('no_finish_reason', `model ${model.id}: its stream stopped without a finish reason`);
      },
      { idempotencyKey: `${host.runId}:${name}#${seq}`, attempt },
      options.timeout,
    );
    await text.drain();
    const limit = maxTokens ?? Number.POSITIVE_INFINITY;
    if (finish.finishReason === 'length' || (finish.outputTokens ?? 0) > limit)
      throw new TerminalError(
        `max_tokens: model ${model.id}: the answer passed maxTokens (${maxTokens ?? 'the model’s own limit'}) after ${prefix.length + text.written} characters`,
      );
    const generation: Generation = {
      text: prefix + text.all,
      finishReason: finish.finishReason,
      usage: {
        model: model.id,
        promptHash,
        inputTokens: finish.inputTokens ?? null,
        outputTokens: finish.outputTokens ?? null,
        cost: costOf(model, finish.inputTokens, finish.outputTokens),
        latencyMs: host.now() - firstStart,
        attempts: attempt,
        resumedAt: prefix.length > 0 ? prefix.length : null,
      },
    };
    seen.end(null, false);
    const matched = model.continuation === 'restart' && prefix.length > 0 ? { seamMatched: redone === prefix } : {};
    // `used`: what the run's budget counts (replays read it here, as they read `ctx.usage`'s reports)
    const used = { tokens: tokensOf(generation.usage), cost: generation.usage.cost ?? 0 };
    host.defer({ type: RUN_EVENT.stepCompleted, data: { seq, name, attempt, output: generation, used, ...matched } });
    const extra = rateExtra(uses, taken, generation);
    await chargeStepRates(host, seq, name, attempt, extra);
    return generation;
  } catch (error) {
    if (error instanceof LeaseLostError) {
      seen.end(describeError(error), false);
      throw error;
    }
    // the text this attempt streamed is kept: the next attempt continues after it
    await text.drain(true).catch(() => {});
    if (host.stopped()) {
      seen.end(describeError(error), false);
      host.checkLive();
    }
    // a failure worth another try goes to the chain's next model at once, its tries counted with the call's
    const delay = retryDelay(error, attempt, options.retry);
    const retryAt = delay === null ? null : host.now() + (next ? 0 : delay);
    const fallback = retryAt !== null && next ? { fallback: next.id } : {};
    seen.end(describeError(error), retryAt !== null, errorClassOf(error));
    // a 429's Retry-After pushes the next free slot of every limit the call took
    await host.write(
      [{ type: RUN_EVENT.stepFailed, data: { seq, name, attempt, ...failureData(error), retryAt, ...fallback } }],
      rateDeferral(error, taken, host.now()),
    );
    if (retryAt === null) throw error;
    throw new Suspension(retryAt);
  }
}

/** The answer as far as the journal holds it: the `step.text` batches of every attempt, in order of offset. */
export function journaledText(events: StoredEvent[]): string {
  let text = '';
  for (const e of events) {
    if (e.type !== RUN_EVENT.stepText) continue;
    const { at, text: piece } = e.data as { at: number; text: string };
    // batches are written in order, each from where the last ended; a batch before the end adds nothing twice
    if (at <= text.length) text = text.slice(0, at) + piece;
  }
  return text;
}

/** The tokens a call used, input and output, as its model reported them. */
export function tokensOf(usage: GenerationUsage): number {
  return (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
}

function costOf(model: Model, input: number | undefined, output: number | undefined): number | null {
  if (!model.price || (input === undefined && output === undefined)) return null;
  return ((input ?? 0) * model.price.input + (output ?? 0) * model.price.output) / 1_000_000;
}

function hashPrompt(model: string, maxTokens: number | undefined, messages: ModelMessage[]): string {
  const prompt = JSON.stringify({ model, maxTokens: maxTokens ?? null, messages });
  return `sha256:${createHash('sha256').update(prompt).digest('hex')}`;
}

function checkOptions(name: string, o: GenerateOptions): GenerateOptions {
  const at = (field: string) => `generate(${name}).${field}`;
  const chain = Array.isArray(o?.model) ? o.model : [o?.model];
  if (chain.length === 0 || chain.length > MAX_CHAIN)
    throw new ValidationError(at('model'), `a fallback chain is 1 to ${MAX_CHAIN} models`);
  chain.forEach((model, i) => {
    const field = Array.isArray(o.model) ? `model[${i}]` : 'model';
    if (typeof model?.stream !== 'function' || typeof model.id !== 'string')
      throw new ValidationError(at(field), 'must be a model (see src/models: offlineModel, openAiCompatibleModel)');
    if (model.continuation !== 'prefix' && model.continuation !== 'restart')
      throw new ValidationError(at(`${field}.continuation`), "must be 'prefix' or 'restart'");
  });
  if (!Array.isArray(o.messages) || o.messages.length === 0)
    throw new ValidationError(at('messages'), 'must be a non-empty list of { role, content }');
  o.messages.forEach((m, i) => {
    if (!ROLES.has(m?.role)) throw new ValidationError(at(`messages[${i}].role`), 'must be system, user or assistant');
    if (typeof m.content !== 'string') throw new ValidationError(at(`messages[${i}].content`), 'must be a string');
  });
  const max = o.maxTokens;
  if (max !== undefined && !(Number.isInteger(max) && max >= 1 && max <= MAX_TOKENS))
    throw new ValidationError(at('maxTokens'), `must be a whole number from 1 to ${MAX_TOKENS} (got ${max})`);
  return o;
}
