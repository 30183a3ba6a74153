import { crashPoint } from '../crash.js';
import {
  ConflictError,
  describeError,
  NonDeterminismError,
  TerminalError,
  TimeoutError,
  ValidationError,
} from '../errors.js';
import type { Journal } from '../journal/journal.js';
import type { Store } from '../storage/store.js';
import {
  workflow,
  type StepContext,
  type StepOptions,
  type Workflow,
  type WorkflowContext,
} from '../runtime/workflow.js';
import { StoreClock } from '../runtime/pass/clock.js';
import { httpRequest } from '../workflows/actions/http.js';
import type { Agent, AgentContext, AgentFunction, CodeAgent } from './agent.js';
import { gatherEvents, type GatheredEvent } from './conversation.js';
import { openTurn, type Opened } from './ledger-turn.js';
import { ledgerContext } from './ledger-context.js';
import { issueLeaseToken } from './lease-token.js';
import type { Tool } from './tools.js';
import { isEnded, type SessionEventType } from './lifecycle.js';
import { readSession, sessionStream } from './view.js';

/** The built-in workflow every session is a run of; the run's id is the session id. */
export const SESSION_WORKFLOW = 'runledger.session';
/** The signal an HTTP agent's report becomes. */
export const REPORT_SIGNAL = 'session.report';

export interface SessionInput {
  session_id: string;
  agent: string;
  input: unknown;
  /** Set for a run started by an inbound agent event: its first step gathers the conversation's events it handles. */
  conversation_id?: string;
  /** The run's concurrency keys read from its event and agent (agent-flow.ts): its limits name them. */
  flow_keys?: Record<string, string>;
  /** Its code agent's success is written by the run's end (view.ts), not a step: a run without a budget. */
  end_in_run?: true;
}

export interface SessionReport {
  /** `success` or `failed`; a report journaled before 0.2 says COMPLETED or FAILED. */
  status: 'success' | 'failed';
  error_message: string | null;
}

/**
 * Where in the session's code an event is recorded. The slot names the event's idempotency key
 * (`session:<id>:<slot>`): a step re-run after a crash writes nothing new, and when two
 * processes raced for the slot (one had lost the run), the one written is the one both follow.
 */
type Slot = 'invocation' | 'invoked' | 'entrypoint' | 'entered' | 'finished';

/** The event the slot holds, or null when the lifecycle refused it: the session had already ended. */
interface Recorded {
  type: SessionEventType | null;
  timestamp: number;
}

type Outcome = { ok: true } | { ok: false; error_message: string; timed_out: boolean };

export interface SessionWorkflowOptions {
  store: Store;
  journal: Journal;
  agents: ReadonlyMap<string, Agent>;
  /** Hosts and CIDRs an HTTP agent may be reached at although the SSRF guard refuses them. */
  allow: string[];
  reportUrl: (sessionId: string) => string;
  /** The tools ledger agents call. */
  tools: ReadonlyMap<string, Tool>;
  maxPayloadBytes: number;
}

/** Writing a lifecycle event waits out a database outage: 1000 tries, backing off to 30 s. */
const RECORD: StepOptions<Recorded> = {
  retry: { maxAttempts: 1000, backoff: { base: '200ms', factor: 2, max: '30s' } },
};
/** An agent's own failures are outcomes, not step failures: a step fails only when its pass stops. */
const ONCE = { retry: { maxAttempts: 1 } };
const MAX_ERROR_CHARS = 2000;

/**
 * The session workflow. SESSION_INITIATED is written when the session starts (with its run, in
 * one transaction); each later lifecycle event is written by a step of its own, and each piece of
 * agent work (the invocation, the entrypoint, the background task) is a step between two of them,
 * so a crash re-runs at most the piece that was running and never writes an event twice (a code
 * agent's run of inbound events opens with one step for all of them up to its background: `openTurn`;
 * its success is written by the run's end, in its transaction: view.ts). */
export function sessionWorkflow(
  o: SessionWorkflowOptions,
  version = '1',
): Workflow<SessionInput, { session_id: string; ended_with: SessionEventType | null }> {
  const clock = new StoreClock(o.store);
  return workflow(SESSION_WORKFLOW, { version }, async (ctx, input: SessionInput) => {
    let session = input;
    const { session_id: id, agent: name } = session;
    const agent = o.agents.get(name);
    const record = (slot: Slot, type: SessionEventType, error?: string) => recordStep(ctx, o, id, slot, type, error);
    const done = (last: Recorded) => ({ session_id: id, ended_with: last.type });
    if (session.conversation_id !== undefined) {
      const conversationId = session.conversation_id;
      const gather = { runId: id, conversationId, agent: name };
      if (agent?.kind === 'code' && ctx.patched('agent-turn-opens-session')) {
        const opened = await ctx.step('open', () => openTurn(o, id, agent.entrypoint !== null, gather), {
          retry: RECORD.retry,
        } as StepOptions<Opened>);
        session = { ...session, input: { ...(session.input as object), events: opened.events } };
        if (opened.last.type === null) return done(opened.last);
        await clock.ready();
        const deadline = opened.last.timestamp + agent.maxWaitMs - clock.offsetMs;
        return done(
          await runCode(ctx, agent, session, deadline, record, o, opened.last.type === 'AGENT_BACKGROUND_TASK_STARTED'),
        );
      }
      const events = await ctx.step('gather', () => gatherEvents(o.store, o.journal, gather), {
        retry: RECORD.retry,
      } as StepOptions<GatheredEvent[]>);
      session = { ...session, input: { ...(session.input as object), events } };
    }

    const started = await record('invocation', 'AGENT_INVOCATION_STARTED');
    if (started.type === null) return done(started);
    const invoked = await ctx.step('invoke', (step) => invoke(agent, session, step, o), ONCE);
    const outcome = await record(
      'invoked',
      invoked.ok ? 'AGENT_INVOCATION_SUCCEEDED' : 'AGENT_INVOCATION_FAILED',
      invoked.ok ? undefined : invoked.error_message,
    );
    if (outcome.type !== 'AGENT_INVOCATION_SUCCEEDED') return done(outcome);
    // another process recorded the success: this one cannot go on without the agent
    if (!agent) throw new TerminalError(`agent '${name}' is not registered in this process`);
    // counted from a database timestamp, held in this process's clock: what remains of the wait is
    // right on a machine whose clock is off (the database's is the one timers follow, see StoreClock)
    await clock.ready();
    const deadline = outcome.timestamp + agent.maxWaitMs - clock.offsetMs;
    const entry = await record('entrypoint', 'AGENT_ENTRYPOINT_STARTED');
    if (entry.type === null) return done(entry);

    if (agent.kind === 'code') return done(await runCode(ctx, agent, session, deadline, record, o));
    const background = await record('entered', 'AGENT_BACKGROUND_TASK_STARTED');
    if (background.type !== 'AGENT_BACKGROUND_TASK_STARTED') return done(background);
    const report = await ctx.waitForEvent<SessionReport>(REPORT_SIGNAL, {
      timeout: Math.max(0, deadline - Date.now()),
    });
    if (report === null) return done(await record('finished', 'SESSION_TIMED_OUT', timedOut(agent).error_message));
    if (report.status === 'success' || (report.status as string) === 'COMPLETED')
      return done(await record('finished', 'AGENT_BACKGROUND_TASK_COMPLETED'));
    return done(
      await record(
        'finished',
        'AGENT_BACKGROUND_TASK_FAILED',
        report.error_message ?? `AgentError: agent '${name}' reported failed`,
      ),
    );
  });
}

async function runCode(
  ctx: WorkflowContext,
  agent: CodeAgent,
  session: SessionInput,
  deadline: number,
  record: (slot: Slot, type: SessionEventType, error?: string) => Promise<Recorded>,
  o: SessionWorkflowOptions,
  begun = false,
): Promise<Recorded> {
  const entrypoint = agent.entrypoint;
  const entered: Outcome = entrypoint
    ? await ctx.step('entrypoint', (step) => runPhase(entrypoint, agent, session, deadline, step), ONCE)
    : { ok: true };
  if (!entered.ok)
    return record(
      'entered',
      entered.timed_out ? 'SESSION_TIMED_OUT' : 'AGENT_ENTRYPOINT_FAILED',
      entered.error_message,
    );
  if (!begun) {
    const background = await record('entered', 'AGENT_BACKGROUND_TASK_STARTED');
    if (background.type !== 'AGENT_BACKGROUND_TASK_STARTED') return background;
  }
  const finished = agent.ledger
    ? await runLedger(ctx, agent, session, deadline, o)
    : await ctx.step('background', (step) => runPhase(agent.background, agent, session, deadline, step), ONCE);
  // recorded by the run's end, in its transaction (view.ts): a step and a transaction fewer per run
  if (finished.ok && session.end_in_run) return { type: 'AGENT_BACKGROUND_TASK_COMPLETED', timestamp: 0 };
  if (finished.ok) return record('finished', 'AGENT_BACKGROUND_TASK_COMPLETED');
  return record(
    'finished',
    finished.timed_out ? 'SESSION_TIMED_OUT' : 'AGENT_BACKGROUND_TASK_FAILED',
    finished.error_message,
  );
}

/**
 * Appends one lifecycle event in a step. The idempotency key makes a re-run (a crash after the
 * append, before the step's completion was journaled) return the event first written. A refusal
 * by the lifecycle means the session has ended; were it still going, the step fails for good, so
 * the run fails and SESSION_FAILED ends the session rather than leaving it running.
 */
function recordStep(
  ctx: WorkflowContext,
  o: SessionWorkflowOptions,
  id: string,
  slot: Slot,
  type: SessionEventType,
  error?: string,
): Promise<Recorded> {
  return ctx.step(
    `record:${slot}`,
    async () => {
      const data =
        error === undefined
          ? {}
          : { error_message: error.length > MAX_ERROR_CHARS ? `${error.slice(0, MAX_ERROR_CHARS - 1)}…` : error };
      try {
        const appended = await o.journal.append(sessionStream(id), [{ type, data }], {
          idempotencyKey: `session:${id}:${slot}`,
        });
        if (!appended.duplicate) crashPoint('session:afterRecord');
        const event = appended.events[0]!;
        return { type: event.type as SessionEventType, timestamp: event.timestamp };
      } catch (e) {
        if (e instanceof ConflictError) {
          const view = await readSession(o.store, id);
          if (view && isEnded(view.status)) return { type: null, timestamp: 0 };
          throw new TerminalError(e.message);
        }
        if (e instanceof ValidationError) throw new TerminalError(e.message);
        throw e;
      }
    },
    RECORD,
  );
}

/** The invocation: for a code agent, its call starting; for an HTTP agent, its acknowledgement (any 2xx). */
async function invoke(
  agent: Agent | undefined,
  session: SessionInput,
  step: StepContext,
  o: SessionWorkflowOptions,
): Promise<Outcome> {
  if (!agent) return failed(`NotFoundError: agent '${session.agent}' is not registered in this process`);
  if (agent.kind === 'code') return { ok: true };
  const report_url = o.reportUrl(session.session_id);
  // journaled before the call: an agent's writes are fenced by the newest invocation's token (remote.ts)
  const lease_token = await issueLeaseToken(o.journal, session.session_id, step.attempt);
  const body = {
    session_id: session.session_id,
    agent: agent.name,
    input: session.input,
    report_url,
    session_url: report_url.replace(/\/report$/, ''),
    lease_token,
  };
  try {
    const response = await httpRequest(
      { method: 'POST', url: agent.url, headers: agent.headers, body, timeout_seconds: agent.timeoutSeconds },
      { idempotencyKey: step.idempotencyKey, signal: step.signal, allow: o.allow },
    );
    if (response.status >= 200 && response.status < 300) return { ok: true };
    return failed(`InvocationError: POST ${agent.url} answered ${response.status}, not 2xx`);
  } catch (error) {
    if (step.signal.aborted) throw error;
    return failed(`InvocationError: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Runs one phase of a code agent until it settles or the session's deadline passes (its signal
 * then fires). When the step's own signal fires (this process lost the run), the pass stops and
 * nothing is recorded: the next owner runs the phase again.
 */
async function runPhase(
  fn: AgentFunction,
  agent: CodeAgent,
  session: SessionInput,
  deadline: number,
  step: StepContext,
): Promise<Outcome> {
  const remaining = deadline - Date.now();
  if (remaining <= 0) return timedOut(agent);
  const controller = new AbortController();
  const stop = () => controller.abort(step.signal.reason);
  step.signal.addEventListener('abort', stop, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => {
      const outcome = timedOut(agent);
      controller.abort(new TimeoutError(outcome.error_message));
      resolve(outcome);
    }, remaining);
  });
  const context: AgentContext = {
    sessionId: session.session_id,
    signal: controller.signal,
    idempotencyKey: step.idempotencyKey,
    attempt: step.attempt,
    node: notLedger(agent),
    tool: notLedger(agent),
    usage: notLedger(agent),
    generate: notLedger(agent),
  };
  const ran = (async () => fn(session.input, context))().then(
    (): Outcome => ({ ok: true }),
    (error: unknown): Outcome => {
      if (step.signal.aborted) throw error;
      return failed(describeError(error));
    },
  );
  try {
    return await Promise.race([ran, expired]);
  } finally {
    clearTimeout(timer);
    step.signal.removeEventListener('abort', stop);
  }
}

/**
 * A ledger agent's background, run in the run itself (not in a step), so its nodes checkpoint and
 * its tool calls wait durably. Its maximum wait is timed while a pass runs it; when the pass stops
 * (the run waits for an approval or a backoff) the timer stops with it, and the next pass times the
 * rest of the wait.
 */
async function runLedger(
  ctx: WorkflowContext,
  agent: CodeAgent,
  session: SessionInput,
  deadline: number,
  o: SessionWorkflowOptions,
): Promise<Outcome> {
  const remaining = deadline - Date.now();
  if (remaining <= 0) return timedOut(agent);
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    clearTimeout(timer);
    controller.abort(ctx.signal.reason);
  };
  ctx.signal.addEventListener('abort', stop, { once: true });
  const expired = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => {
      const outcome = timedOut(agent);
      controller.abort(new TimeoutError(outcome.error_message));
      resolve(outcome);
    }, remaining);
  });
  const context: AgentContext = ledgerContext(ctx, {
    sessionId: session.session_id,
    agent,
    tools: o.tools,
    signal: controller.signal,
    maxPayloadBytes: o.maxPayloadBytes,
  });
  const ran = (async () => agent.background(session.input, context))().then(
    (): Outcome => ({ ok: true }),
    (error: unknown): Outcome => {
      // the run cannot go on: let it fail (its end records SESSION_FAILED)
      if (error instanceof NonDeterminismError) throw error;
      return failed(describeError(error));
    },
  );
  try {
    return await Promise.race([ran, expired]);
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', stop);
  }
}

const failed = (error_message: string): Outcome => ({ ok: false, error_message, timed_out: false });

/** `ctx.node` and `ctx.tool` of an agent defined without `ledger`. */
function notLedger(agent: CodeAgent): () => never {
  return () => {
    throw new TerminalError(
      `agent '${agent.name}' is not a ledger agent: define it with { ledger: {} } for ctx.node/tool/generate`,
    );
  };
}

function timedOut(agent: Agent): { ok: false; error_message: string; timed_out: true } {
  return {
    ok: false,
    error_message: `TimeoutError: agent '${agent.name}' did not finish within its maximum wait of ${formatMs(agent.maxWaitMs)}`,
    timed_out: true,
  };
}

function formatMs(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 1000 && ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}
