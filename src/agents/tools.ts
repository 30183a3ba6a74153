import { toMs, type Duration } from '../duration.js';
import { RunledgerError, TerminalError, ValidationError } from '../errors.js';
import type { RateLimitUse, Usage } from '../runtime/flow.js';
import type { RetryPolicy } from '../runtime/workflow.js';
import { rateUses } from '../runtime/pass/rate.js';
import { effectOf, type Reconciled } from '../runtime/pass/effects.js';
import type { RiskLevel } from '../storage/ledger.js';

/** What a tool's `run` is given besides its input. */
export interface ToolContext {
  /** Stable across retries, node attempts and crashes of this call: give it to the side effect (`Idempotency-Key`). */
  idempotencyKey: string;
  /** Fires on the tool's timeout, on cancellation, or when this process lost the run. */
  signal: AbortSignal;
  /** 1 on the first try of this call. */
  attempt: number;
}

export interface ToolDefinition<I = any, O = any> {
  risk: RiskLevel;
  /** Per try; then the call ends `timeout` and the agent gets a ToolTimeoutError. */
  timeout: Duration;
  /** How long a call waits for a person's decision before it ends `blocked` (expired). Default 24h. */
  approvalTimeout?: Duration;
  /** Whether a call needs a person's approval. Default: `risk === 'high'` (an agent's `approval` can change it). */
  approval?: boolean;
  /** Tries of one call, the first included. Default 1: a failed call is the agent's to handle. */
  retry?: RetryPolicy;
  run: (input: I, ctx: ToolContext) => Promise<O>;
  /**
   * What a call used, read from its output (a model's answer: `(answer) => ({ tokens: answer.usage.total_tokens })`):
   * charged to the run's usage after the call (`ctx.usage`), so the agent's `flow.budget` counts it without a report.
   */
  usage?: (output: O, input: I) => Usage;
  /**
   * Named rate limits (`engine.limits`) each try of a call takes before it runs, as a step's `rateLimit`: no room,
   * the call waits durably for the next slot (no worker held). `charge` reads the output, charged past the units taken.
   */
  rateLimit?: RateLimitUse | RateLimitUse[];
  /**
   * The tool is a side effect whose outcome can be unknown: the call's intent is journaled before it runs, and a try
   * after a crash between the call and its record asks `reconcile(idempotencyKey)` whether it happened (the ledger
   * shows `unknown` then `reconciled`) instead of calling again; `atMostOnce` without `reconcile` waits for a person.
   * `true`: the intent only. See docs/agents.md.
   */
  effect?: true | ToolEffect<O>;
}

/** A tool's `effect`: how to learn whether a call whose outcome was not recorded happened. */
export interface ToolEffect<O = any> {
  reconcile?: (idempotencyKey: string, ctx: ToolContext) => Promise<Reconciled<O>>;
  atMostOnce?: boolean;
}

export interface Tool {
  readonly name: string;
  readonly risk: RiskLevel;
  readonly timeoutMs: number;
  readonly approvalTimeoutMs: number;
  readonly approval: boolean | null;
  readonly retry: RetryPolicy;
  readonly run: (input: any, ctx: ToolContext) => Promise<unknown>;
  readonly usage: ((output: any, input: any) => Usage) | null;
  readonly rateLimit: RateLimitUse[];
  readonly effect: ToolEffect | null;
}

const RISKS: RiskLevel[] = ['low', 'medium', 'high'];
const DEFAULT_APPROVAL_TIMEOUT_MS = 24 * 3600_000;

/**
 * Declares a tool agents call with `ctx.tool(name, input)`. Each call is recorded in the ledger
 * (`agent_tool_calls`) with its risk level, input, output, status and times; a call that needs
 * approval waits for a person's decision without holding a worker.
 *
 * @example
 * const refund = defineTool('issue_refund', {
 *   risk: 'high', timeout: '10s', approvalTimeout: '1h',
 *   run: async ({ order, amount }, { idempotencyKey }) => payments.refund(order, amount, { idempotencyKey }),
 * });
 */
export function defineTool<I = any, O = any>(name: string, definition: ToolDefinition<I, O>): Tool {
  if (typeof name !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name)) {
    throw new ValidationError(
      'name',
      `must be 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit (got ${JSON.stringify(name)})`,
    );
  }
  if (!RISKS.includes(definition?.risk))
    throw new ValidationError('risk', `must be one of ${RISKS.join(', ')} (got ${JSON.stringify(definition?.risk)})`);
  if (typeof definition.run !== 'function') throw new ValidationError('run', 'must be a function');
  const timeoutMs = toMs(definition.timeout, 'timeout');
  const approvalTimeoutMs =
    definition.approvalTimeout === undefined
      ? DEFAULT_APPROVAL_TIMEOUT_MS
      : toMs(definition.approvalTimeout, 'approvalTimeout');
  if (definition.usage !== undefined && typeof definition.usage !== 'function')
    throw new ValidationError('usage', 'must be a function of the output');
  const rateLimit = rateUses(definition.rateLimit, 'rateLimit');
  const effect = effectOf(definition.effect as ToolEffect | undefined) as ToolEffect | null;
  if (definition.approval !== undefined && typeof definition.approval !== 'boolean')
    throw new ValidationError('approval', 'must be true or false');
  return Object.freeze({
    name,
    risk: definition.risk,
    timeoutMs,
    approvalTimeoutMs,
    approval: definition.approval ?? null,
    retry: definition.retry ?? { maxAttempts: 1 },
    run: definition.run as Tool['run'],
    usage: (definition.usage as Tool['usage'] | undefined) ?? null,
    rateLimit,
    effect,
  });
}

/** A tool call failed: the tool threw, or (subclasses) timed out or was not allowed to run. */
export class ToolError extends RunledgerError {
  override readonly code: string = 'tool_error';
  override name = 'ToolError';
  constructor(
    readonly tool: string,
    message: string,
  ) {
    super(message);
  }
}

/** The tool ran past its timeout; the call ended `timeout`. */
export class ToolTimeoutError extends ToolError {
  override readonly code = 'tool_timeout';
  override name = 'ToolTimeoutError';
}

/**
 * The call was rejected by a person or its approval expired; it ended `blocked` and the tool never
 * ran. Not retried: a node that lets it through fails for good (a decision stands).
 */
export class ToolBlockedError extends TerminalError {
  override name = 'ToolBlockedError';
  constructor(
    readonly tool: string,
    message: string,
    readonly decision: 'rejected' | 'expired',
  ) {
    super(message);
  }
}
