import { toMs, type Duration } from '../duration.js';
import { ValidationError } from '../errors.js';
import type { Usage } from '../runtime/flow.js';
import type { GenerateOptions, Generation } from '../runtime/model.js';
import type { NodeContext, RetryPolicy } from '../runtime/workflow.js';
import type { RiskLevel } from '../storage/ledger.js';
import { checkAgentFlow, type AgentFlowOptions } from './agent-flow.js';

/** What a TypeScript agent's code is given. */
export interface AgentContext {
  readonly sessionId: string;
  /** Fires when the session's maximum wait passes, when its run is cancelled, or when this process lost the run. */
  readonly signal: AbortSignal;
  /** Stable across re-runs of this phase after a crash: pass it to side effects. */
  readonly idempotencyKey: string;
  /**
   * 1 on the first run of this phase; more when a crash made another process run it again (always 1 for a ledger
   * agent's background: see its nodes).
   */
  readonly attempt: number;
  /**
   * A ledger agent's step (`agent_steps`) and checkpoint (`agent_checkpoints`): `fn` runs, its
   * result is saved, and after a crash the run resumes after the last node whose checkpoint
   * committed: that node is never entered again, its saved result is returned. A node that throws
   * is tried again from its start after a backoff (the agent's `ledger.retry`); the tool calls it
   * completed are not made again. With `when: false` the node is recorded `skipped` and not run.
   * Only for agents defined with `ledger`.
   */
  node<T>(
    name: string,
    fn: (node: NodeContext) => Promise<T>,
    options?: { input?: unknown; when?: boolean },
  ): Promise<T>;
  /**
   * Calls a registered tool (`defineTool`), recorded in `agent_tool_calls`. A call that needs
   * approval waits (holding no worker) for `POST /agent/tool-calls/{id}/approve`; rejected or
   * expired, it throws ToolBlockedError. A timeout throws ToolTimeoutError, a failure ToolError.
   * Only for agents defined with `ledger`.
   */
  tool<O = unknown>(name: string, input: unknown): Promise<O>;
  /**
   * Charges what the run used (`{ tokens, cost, toolCalls }`) to its usage, which the agent's `flow.budget` caps; a
   * tool defined with `usage` charges its calls itself. Only for agents defined with `ledger`.
   */
  usage(used: Usage): Promise<void>;
  /**
   * A model call as a durable step of the run (the workflows' `ctx.generate`, same options): its text is journaled in
   * small batches and live on `GET /runs/{id}/stream`, a crash mid-answer continues from the journaled text, a
   * completed call is never made again, and its tokens (in + out, as the model reported them) are charged to the
   * run's usage, which the agent's `flow.budget` caps. Only for agents defined with `ledger`.
   *
   * @example const { text } = await ctx.generate('classify', { model: offlineModel(), messages: [{ role: 'user', content: 'hi' }] });
   */
  generate(name: string, options: GenerateOptions): Promise<Generation>;
}

/**
 * What a message that arrives while its conversation's run is busy does: run after it (`queue`), or join the
 * conversation's run still waiting for its turn (`coalesce`).
 */
export type ArrivalPolicy = 'queue' | 'coalesce';

/**
 * The options that make an agent a ledger agent: its background runs as nodes and tool calls recorded in the agent
 * ledger.
 */
export interface LedgerOptions {
  /** Default `queue`. */
  arrival?: ArrivalPolicy;
  /** Attempts of each node, the first included, and their backoff. Default 3 attempts, from 1 s doubling. */
  retry?: RetryPolicy;
  /** The risk levels whose calls need approval unless the tool says otherwise. Default ['high']. */
  approval?: RiskLevel[];
  /** Recorded as the run's `graph_version`. Default 'v1'. */
  graphVersion?: string;
}

export type AgentFunction<I = any> = (input: I, ctx: AgentContext) => Promise<unknown>;

/**
 * A TypeScript agent in two phases. `entrypoint` (optional) is the quick part that accepts the
 * work: validate, reserve, hand off; throwing records AGENT_ENTRYPOINT_FAILED. `background` is the
 * long part: resolving records AGENT_BACKGROUND_TASK_COMPLETED, throwing AGENT_BACKGROUND_TASK_FAILED;
 * its return value is not kept. Each phase runs at least once: after a crash, another process runs
 * the phase that was running again, with the same `idempotencyKey`.
 */
export interface CodeAgentDefinition<I = any> {
  entrypoint?: AgentFunction<I>;
  background: AgentFunction<I>;
  /** From the invocation's success to the end of `background`; then SESSION_TIMED_OUT. Default 15m, at most 24 days. */
  maxWait?: Duration;
  /**
   * Makes it a ledger agent: `background` runs in the run itself, so `ctx.node` and `ctx.tool` can
   * checkpoint and wait durably. Its code outside nodes runs again each time the run resumes
   * (after a crash, an approval, a backoff): keep the work in nodes and tools.
   */
  ledger?: LedgerOptions;
  /** Keyed concurrency, a per-conversation debounce, batches, a priority and a budget of its runs (agent-flow.ts). */
  flow?: AgentFlowOptions;
}

/**
 * An agent behind an HTTP endpoint. The invocation POSTs `{ session_id, agent, input, report_url }`
 * (with an `Idempotency-Key`); a 2xx acknowledges it (the entrypoint has started its background
 * task), anything else fails it. The agent then reports once to `report_url`:
 * `POST { status: 'success' | 'failed', error_message? }` (COMPLETED and FAILED are still accepted).
 */
export interface HttpAgentDefinition {
  url: string;
  headers?: Record<string, string>;
  /** From the acknowledgement to the report; then SESSION_TIMED_OUT. Default 15m. */
  maxWait?: Duration;
  /** How long the acknowledgement may take, in seconds (at most 300). Default 30. */
  timeoutSeconds?: number;
  /** Keyed concurrency, a per-conversation debounce, batches, a priority and a budget of its runs (agent-flow.ts). */
  flow?: AgentFlowOptions;
}

export interface CodeAgent {
  readonly kind: 'code';
  readonly name: string;
  readonly maxWaitMs: number;
  readonly entrypoint: AgentFunction | null;
  readonly background: AgentFunction;
  /** Set for a ledger agent. */
  readonly ledger: Required<LedgerOptions> | null;
  /** Its runs' flow control, checked; null without one. */
  readonly flow: AgentFlowOptions | null;
}

export interface HttpAgent {
  readonly kind: 'http';
  readonly name: string;
  readonly maxWaitMs: number;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly timeoutSeconds: number;
  readonly flow: AgentFlowOptions | null;
}

export type Agent = CodeAgent | HttpAgent;

export const DEFAULT_MAX_WAIT_MS = 15 * 60_000;
/** A timer of the process waits out a code agent's maximum wait: setTimeout's limit. */
const MAX_CODE_WAIT_MS = 2 ** 31 - 1;

/**
 * Declares an agent a session can run: a TypeScript function (its background work), a
 * `{ entrypoint?, background }` pair, or an HTTP endpoint `{ url }` that acknowledges at once and
 * reports later.
 *
 * @example
 * const summarize = defineAgent('summarize', {
 *   entrypoint: async (input: { doc: string }) => { if (!input.doc) throw new Error('no doc') },
 *   background: async (input, { signal }) => llm.summarize(input.doc, { signal }),
 *   maxWait: '10m',
 * });
 * const remote = defineAgent('remote', { url: 'https://agents.example.com/invoke', maxWait: '1h' });
 */
export function defineAgent<I = any>(
  name: string,
  definition: AgentFunction<I> | CodeAgentDefinition<I> | HttpAgentDefinition,
): Agent {
  if (typeof name !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name)) {
    throw new ValidationError(
      'name',
      `must be 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit (got ${JSON.stringify(name)})`,
    );
  }
  if (typeof definition === 'function')
    return Object.freeze({
      kind: 'code',
      name,
      maxWaitMs: DEFAULT_MAX_WAIT_MS,
      entrypoint: null,
      background: definition as AgentFunction,
      ledger: null,
      flow: null,
    });
  if (typeof definition !== 'object' || definition === null)
    throw new ValidationError('definition', 'must be a function, { entrypoint?, background } or { url }');
  const maxWaitMs = definition.maxWait === undefined ? DEFAULT_MAX_WAIT_MS : toMs(definition.maxWait, 'maxWait');
  const flow = definition.flow === undefined ? null : checkAgentFlow(definition.flow);
  if ('url' in definition) return httpAgent(name, definition, maxWaitMs, flow);
  const { entrypoint, background } = definition;
  if (typeof background !== 'function') throw new ValidationError('background', 'must be a function');
  if (entrypoint !== undefined && typeof entrypoint !== 'function')
    throw new ValidationError('entrypoint', 'must be a function');
  if (maxWaitMs > MAX_CODE_WAIT_MS)
    throw new ValidationError('maxWait', `must be at most ${MAX_CODE_WAIT_MS} ms for a TypeScript agent`);
  const ledger = definition.ledger === undefined ? null : ledgerOptions(definition.ledger);
  return Object.freeze({
    kind: 'code',
    name,
    maxWaitMs,
    entrypoint: (entrypoint as AgentFunction | undefined) ?? null,
    background: background as AgentFunction,
    ledger,
    flow,
  });
}

function ledgerOptions(o: LedgerOptions): Required<LedgerOptions> {
  if (typeof o !== 'object' || o === null) throw new ValidationError('ledger', 'must be an object');
  const arrival = o.arrival ?? 'queue';
  if (arrival !== 'queue' && arrival !== 'coalesce')
    throw new ValidationError('ledger.arrival', `must be 'queue' or 'coalesce' (got ${JSON.stringify(arrival)})`);
  const approval = o.approval ?? ['high'];
  if (!Array.isArray(approval) || approval.some((r) => !['low', 'medium', 'high'].includes(r)))
    throw new ValidationError('ledger.approval', "must be a list of 'low', 'medium', 'high'");
  const graphVersion = o.graphVersion ?? 'v1';
  if (typeof graphVersion !== 'string' || graphVersion.length === 0 || graphVersion.length > 100)
    throw new ValidationError('ledger.graphVersion', 'must be 1 to 100 characters');
  return Object.freeze({
    arrival,
    retry: o.retry ?? { maxAttempts: 3, backoff: { base: '1s', factor: 2, max: '1m' } },
    approval,
    graphVersion,
  });
}

function httpAgent(
  name: string,
  definition: HttpAgentDefinition,
  maxWaitMs: number,
  flow: AgentFlowOptions | null,
): HttpAgent {
  let url: URL;
  try {
    url = new URL(definition.url);
  } catch {
    throw new ValidationError('url', `must be an absolute URL (got ${JSON.stringify(definition.url)})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ValidationError('url', `must be http: or https: (got ${url.protocol})`);
  const headers = definition.headers ?? {};
  for (const [header, value] of Object.entries(headers)) {
    if (typeof value !== 'string') throw new ValidationError(`headers.${header}`, 'must be a string');
  }
  const timeoutSeconds = definition.timeoutSeconds ?? 30;
  if (!(typeof timeoutSeconds === 'number' && timeoutSeconds > 0 && timeoutSeconds <= 300)) {
    throw new ValidationError('timeoutSeconds', `must be a number in (0, 300] (got ${String(timeoutSeconds)})`);
  }
  return Object.freeze({ kind: 'http', name, maxWaitMs, url: url.href, headers: { ...headers }, timeoutSeconds, flow });
}
