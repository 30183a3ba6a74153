import { createHash } from 'node:crypto';
import { TerminalError, type ValidationError } from '../errors.js';
import { checkJson } from '../json.js';
import type { GenerateOptions, Generation } from '../runtime/model.js';
import { Suspension } from '../runtime/pass/calls.js';
import type { EffectOptions } from '../runtime/pass/effects.js';
import type { StepContext, WorkflowContext } from '../runtime/workflow.js';
import type { AgentContext, CodeAgent } from './agent.js';
import { ToolBlockedError, ToolError, ToolTimeoutError, type Tool, type ToolEffect } from './tools.js';

/** A person's decision on a tool call, as the approval signal carries it. */
export interface Decision {
  decision: 'approved' | 'rejected';
  by: string;
  reason: string | null;
}

/** What a tool call's run step is given (and its journal shows): the ledger projection reads it. */
export interface ToolCallInput {
  ledger: 'tool';
  key: string;
  tool: string;
  risk: Tool['risk'];
  node: string | null;
  input: unknown;
  approval_timeout_ms?: number;
}

/** The signal that carries the decision on the tool call with external idempotency key `key`. */
export function approvalSignal(key: string): string {
  return `approval:${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}

/** Errors that say the pass stopped, not that the tool failed: they pass through unchanged. */
const PASS_STOPS = new Set(['CancelledError', 'LeaseLostError', 'PassAborted', 'NonDeterminismError']);

/**
 * The context a ledger agent's background gets: `node` and `tool` over the run's own `ctx`, so
 * each node is a checkpoint and each tool call a step of the run, and a call waiting for approval
 * is a durable wait. A tool call's external idempotency key is `<run>:<node>:<tool>#<n>` (the n-th
 * call of that tool in that node): the same in every attempt of the node and after any crash.
 */
export function ledgerContext(
  ctx: WorkflowContext,
  o: {
    sessionId: string;
    agent: CodeAgent;
    tools: ReadonlyMap<string, Tool>;
    signal: AbortSignal;
    maxPayloadBytes: number;
  },
): AgentContext {
  const ledger = o.agent.ledger!;
  let current: string | null = null;
  let counts = new Map<string, number>();
  let previous: unknown = null;

  return {
    sessionId: o.sessionId,
    signal: o.signal,
    idempotencyKey: `${o.sessionId}:background`,
    attempt: 1,

    async node<T>(
      name: string,
      fn: (node: { attempt: number }) => Promise<T>,
      options: { input?: unknown; when?: boolean } = {},
    ): Promise<T> {
      if (typeof name !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name))
        throw new TerminalError(
          `node name must be 1 to 100 letters, digits, '.', '_' or '-' (got ${JSON.stringify(name)})`,
        );
      if (current !== null)
        throw new TerminalError(`node '${name}' was called inside node '${current}': nodes do not nest`);
      const input = options.input !== undefined ? options.input : previous;
      const output = await ctx.node(
        name,
        async (node) => {
          current = name;
          counts = new Map();
          try {
            return await fn(node);
          } finally {
            current = null;
          }
        },
        { retry: ledger.retry, input: input ?? null, ...(options.when === false ? { skip: true } : {}) },
      );
      if (options.when !== false) previous = output;
      return output;
    },

    async tool<O>(name: string, input: unknown): Promise<O> {
      const tool = o.tools.get(name);
      if (!tool)
        throw new TerminalError(
          `no tool is named ${JSON.stringify(name)} (there are: ${[...o.tools.keys()].sort().join(', ') || 'none'})`,
        );
      try {
        checkJson(`tool ${name}: input`, input ?? null, o.maxPayloadBytes);
      } catch (error) {
        throw new TerminalError((error as ValidationError).message);
      }
      const n = (counts.get(name) ?? 0) + 1;
      counts.set(name, n);
      const key = `${o.sessionId}:${current ?? '-'}:${name}#${n}`;
      const call: ToolCallInput = {
        ledger: 'tool',
        key,
        tool: name,
        risk: tool.risk,
        node: current,
        input: input ?? null,
      };
      if (tool.approval ?? ledger.approval.includes(tool.risk)) {
        await ctx.step(`tool.request:${name}`, async () => null, {
          input: { ...call, approval_timeout_ms: tool.approvalTimeoutMs },
          retry: { maxAttempts: 1 },
        });
        const decision = await ctx.waitForEvent<Decision>(approvalSignal(key), { timeout: tool.approvalTimeoutMs });
        if (decision === null)
          throw new ToolBlockedError(
            name,
            `the approval of ${name} expired after ${tool.approvalTimeoutMs} ms`,
            'expired',
          );
        if (decision.decision !== 'approved')
          throw new ToolBlockedError(
            name,
            `${name} was rejected by ${decision.by}${decision.reason ? `: ${decision.reason}` : ''}`,
            'rejected',
          );
      }
      let output: O;
      try {
        output = (await ctx.step(
          `tool:${name}`,
          (step) => tool.run(input ?? null, { idempotencyKey: key, signal: step.signal, attempt: step.attempt }),
          {
            input: call,
            timeout: tool.timeoutMs,
            retry: tool.retry,
            ...(tool.rateLimit.length > 0 ? { rateLimit: tool.rateLimit } : {}),
            ...(tool.effect ? { effect: toolEffect(tool.effect, key) } : {}),
          },
        )) as O;
      } catch (error) {
        // a wait of the pass (the tool's rate limit had no room) is no failure of the tool
        if (error instanceof Suspension) throw error;
        const e = error instanceof Error ? error : new Error(String(error));
        if (PASS_STOPS.has(e.name)) throw error;
        if (e.name === 'TimeoutError')
          throw new ToolTimeoutError(name, `${name} did not finish within ${tool.timeoutMs} ms`);
        throw new ToolError(name, `${name} failed: ${e.name}: ${e.message}`);
      }
      // what the call used, charged to the run's budget: journaled once, a replay counts it again from the journal
      if (tool.usage) await ctx.usage(tool.usage(output, input ?? null));
      return output;
    },

    usage: (used) => ctx.usage(used),

    async generate(name: string, options: GenerateOptions): Promise<Generation> {
      if (typeof name !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name))
        throw new TerminalError(
          `generate name must be 1 to 100 letters, digits, '.', '_' or '-' (got ${JSON.stringify(name)})`,
        );
      // the runtime's own model call: journaled, resumed mid-answer after a crash, replayed from its record, its
      // tokens and cost charged to the run's budget with its completion
      return ctx.generate(`generate:${name}`, options);
    },
  };
}

/** A tool's effect as its step's: `reconcile` is asked with the call's external idempotency key (the tool's). */
function toolEffect(effect: ToolEffect, key: string): EffectOptions<unknown> {
  const { reconcile } = effect;
  return {
    ...(effect.atMostOnce ? { atMostOnce: true } : {}),
    ...(reconcile
      ? {
          reconcile: (_stepKey: string, step: StepContext) =>
            reconcile(key, { idempotencyKey: key, signal: step.signal, attempt: step.attempt }),
        }
      : {}),
  };
}
