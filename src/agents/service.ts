import type { Engine } from '../engine.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import { checkJson, checkName } from '../json.js';
import { publicUrlFor } from '../public-url.js';
import { runStream } from '../runtime/pass/history.js';
import { hashedId } from '../runtime/start/keyed.js';
import { currentStatus, readRunView } from '../runtime/read/view.js';
import type { FlowOptions } from '../runtime/flow.js';
import type { Workflow } from '../runtime/workflow.js';
import type { Store } from '../storage/store.js';
import type { Agent } from './agent.js';
import { checkReport, retrying } from './report.js';
import { agentStart, type FlowEvent } from './agent-flow.js';
import { isEnded, isSessionEventType, SESSION_EVENT_TYPES } from './lifecycle.js';
import { conversationOrderingKey } from './conversation.js';
import { projectLedger } from './ledger-projection.js';
import { pruneSession } from './retention.js';
import { agentSet, type AgentSet } from './agent-set.js';
import type { Tool } from './tools.js';
import { REPORT_SIGNAL, SESSION_WORKFLOW, sessionWorkflow, type SessionInput, type SessionReport } from './session.js';
import {
  projectSessions,
  readSession,
  sessionStream,
  toRecord,
  toSessionEvent,
  type SessionEvent,
  type SessionRecord,
  type SessionView,
} from './view.js';
import { RUN_EVENT } from '../runtime/events.js';

export interface SessionsOptions {
  /** The agents sessions can run; `sample-agent` is added unless one of them has that name. */
  agents: Agent[];
  /** Hosts and CIDRs HTTP agents may be reached at although the SSRF guard refuses them (`127.0.0.1`, `10.0.0.0/8`). */
  allow?: string[];
  /**
   * Where HTTP agents report: `<reportBaseUrl>/sessions/<id>/report` (the public URL). Without it, invoking an HTTP
   * agent fails naming RUNLEDGER_PUBLIC_URL.
   */
  reportBaseUrl?: string;
  /** The tools ledger agents call (`defineTool`); the sample agent's are added unless one of them has their name. */
  tools?: Tool[];
}

/** A session's own flow over its agent's: each field given replaces the agent's (checked as `POST /runs` checks it). */
export type SessionFlow = Pick<FlowOptions, 'priority' | 'budget'>;

export interface ReportResult {
  session_id: string;
  /** The report the session took (the first one). */
  status: SessionReport['status'];
  /** true: this report had been received before and nothing was written. */
  duplicate: boolean;
}

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;

/**
 * Agent sessions on an engine. A session is a run of the built-in workflow `runledger.session`
 * whose id is the session id; its lifecycle events are the stream `session:<id>`, its summary the
 * `session` projection. Rules and schedules start sessions through `start` and `has`.
 */
export class SessionService {
  private agents: ReadonlyMap<string, Agent>;
  private reloads = 0;

  constructor(
    private readonly engine: Engine,
    private readonly store: Store,
    set: AgentSet,
    private workflow: Workflow<SessionInput>,
    private readonly build: (set: AgentSet, version: string) => Workflow<SessionInput>,
  ) {
    this.agents = set.agents;
  }

  /**
   * Takes these agents and tools for the sessions started from now on (`runledger dev`, on a save of its `--agents`
   * module): a new version of the session workflow runs them, so a session in flight goes on with the code it
   * started on (its journal replays on it) and the next one, a conversation's next turn too, starts on the new.
   * Every reload is a version (`1.<n>`): an agent's code is its function and whatever it calls, which no hash of
   * the function's source covers. One process only: others keep the agents they have.
   */
  reload(options: { agents?: Agent[]; tools?: Tool[] }): string {
    const next = agentSet(options);
    const workflow = this.build(next, `1.${++this.reloads}`);
    this.engine.register(workflow);
    [this.agents, this.workflow] = [next.agents, workflow];
    return workflow.version;
  }

  /** The agent named `name`, or undefined. */
  agent(name: string): Agent | undefined {
    return this.agents.get(name);
  }

  /**
   * Starts a session of `agent` (for rules and schedules), idempotently: the session id is
   * `input.session_id` when that is a string, else `ses_` + the first 32 hex digits of the
   * SHA-256 of `key`. A repeated key (or session id) returns the session it first started and
   * starts nothing. With `tx`, the session starts in that transaction.
   */
  async start(p: { agent: string; input: unknown; key: string; tx?: Store }): Promise<{ run_id: string }> {
    const given =
      typeof p.input === 'object' && p.input !== null ? (p.input as { session_id?: unknown }).session_id : undefined;
    if (typeof given === 'string') {
      const id = checkSessionId(given, 'input.session_id');
      await this.open(id, p.agent, p.input ?? null, {}, p.tx);
      return { run_id: id };
    }
    return { run_id: await this.keyed(checkName('key', p.key, 1000), p.agent, p.input ?? null, {}, p.tx) };
  }

  /** Is there an agent named `name`? */
  has(name: string): boolean {
    return this.agents.has(name);
  }

  /** The names of the agents, sorted. */
  names(): string[] {
    return [...this.agents.keys()].sort();
  }

  /**
   * Starts a session (for the API). Its id: `session_id` when given, else derived from
   * `idempotencyKey` as `start` derives it from its key, else a new `ses_…` id. An existing
   * session of the same agent is returned as it is; of another agent, a ConflictError.
   * `flow`'s fields replace the agent's (`priority`, `budget`) for this session's run.
   *
   * @example await service.create({ agent: 'research', flow: { priority: 10, budget: { tokens: 40_000 } } })
   */
  async create(p: {
    agent: string;
    input?: unknown;
    session_id?: string;
    idempotencyKey?: string;
    flow?: SessionFlow;
  }): Promise<SessionRecord> {
    const flow = p.flow ?? {};
    const id =
      p.session_id !== undefined
        ? checkSessionId(p.session_id, 'session_id')
        : p.idempotencyKey !== undefined
          ? await this.keyed(checkName('Idempotency-Key', p.idempotencyKey, 1000), p.agent, p.input ?? null, flow)
          : newId('ses');
    // an existing session of the same agent is returned as it is; of another agent, a ConflictError
    return (await this.open(id, p.agent, p.input ?? null, flow)) ?? toRecord((await readSession(this.store, id))!);
  }

  /** The session a key started (the runtime's keyed start, scope `session-key`): its id is `ses_` + the key's hash. */
  private async keyed(key: string, agent: string, input: unknown, flow: SessionFlow, tx?: Store): Promise<string> {
    const { runId } = await this.engine.runtime.startKeyed({
      scope: 'session-key',
      key,
      ...(tx ? { tx } : {}),
      name: async () => ({ runId: keyedId(key) }),
      begin: async (t, id) => void (await this.open(id, agent, input, flow, t)),
    });
    return runId;
  }

  async get(id: string): Promise<SessionRecord> {
    return toRecord(await this.view(id));
  }

  /**
   * The session's lifecycle events, oldest first (`order: 'desc'`, newest first: the brief's polling
   * query); `status` keeps those of one type, `limit` the first N in that order. A session has a
   * handful of events (six on the happy path), so it is read whole and not paged.
   */
  async events(
    id: string,
    options: { status?: string; order?: 'asc' | 'desc'; limit?: number } = {},
  ): Promise<SessionEvent[]> {
    const { status, order = 'asc', limit } = options;
    if (status !== undefined && !isSessionEventType(status))
      throw new ValidationError(
        'status',
        `must be one of ${SESSION_EVENT_TYPES.join(', ')} (got ${JSON.stringify(status)})`,
      );
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 500))
      throw new ValidationError('limit', `must be an integer from 1 to 500 (got ${JSON.stringify(limit)})`);
    await this.view(id);
    const events = await this.engine.journal.readStream(sessionStream(id), {
      limit: 1000,
      backwards: order === 'desc',
    });
    return events
      .filter((e) => status === undefined || e.type === status)
      .slice(0, limit)
      .map(toSessionEvent);
  }

  /**
   * An HTTP agent's report. The first one is taken: repeating it is harmless (`duplicate: true`),
   * a different one is a ConflictError, and so is any report once the session has ended without
   * one (it timed out). An unknown session is a NotFoundError. When the store is unreachable the
   * write is retried with backoff before the error reaches the agent.
   */
  async report(id: string, body: { status: string; error_message?: string | null }): Promise<ReportResult> {
    const report = checkReport(body);
    return retrying(async () => {
      const session = await this.view(id);
      if (this.agents.get(session.agent)?.kind === 'code')
        throw new ConflictError(
          `session ${id} runs the TypeScript agent '${session.agent}', which reports by returning`,
        );
      const first = await this.firstReport(id);
      if (first) return accepted(id, first, report, true);
      if (isEnded(session.status))
        throw new ConflictError(`session ${id} has already ended: ${session.last_event} (${session.status})`);
      await this.engine.signal(id, REPORT_SIGNAL, report, { idempotencyKey: 'report' });
      // the signal's fixed key lets one report in: if another won a race, this one conflicts
      return accepted(id, (await this.firstReport(id)) ?? report, report, false);
    });
  }

  private async view(id: string): Promise<SessionView> {
    const view = await readSession(this.store, id);
    if (!view) throw new NotFoundError(`session ${id} not found`);
    return view;
  }

  private async firstReport(id: string): Promise<SessionReport | undefined> {
    const events = await this.engine.journal.readStream(runStream(id), { limit: 100_000 });
    const sent = events.find(
      (e) => e.type === RUN_EVENT.signalSent && (e.data as { name: string }).name === REPORT_SIGNAL,
    );
    const report = (sent?.data as { payload: SessionReport } | undefined)?.payload;
    // a report journaled before 0.2 says COMPLETED or FAILED
    return report && { ...report, status: currentStatus(report.status) as SessionReport['status'] };
  }

  /**
   * Starts the run of an inbound agent event in the caller's transaction (the intake's): a session
   * whose run takes its conversation's turn (ordering key `conversation:<id>`), so the runs of one
   * conversation run one at a time, in arrival order, in any process.
   */
  async startForEvent(
    tx: Store,
    p: {
      id: string;
      agent: string;
      input: unknown;
      conversation_id: string;
      user_id: string;
      event_id: string;
      input_class: string;
      /** Runs of the conversation it waits in front of, if they still wait (a redriven event keeps its place). */
      ahead?: readonly string[];
      /** Its first pass waits until then: a debounce window's run is parked until its timer closes the window. */
      notBefore?: number;
    },
  ): Promise<void> {
    // the intake's new id: no session has it yet, so none is read first
    this.check(p.agent, p.input);
    const event = { ...p, orderingKey: conversationOrderingKey(p.conversation_id) };
    await this.initiate(tx, p.id, p.agent, p.input, {}, event);
  }

  /**
   * Starts session `id` (with `tx`, in that transaction) unless it exists: an existing one of the
   * same agent is returned as it is (of another agent, a ConflictError); null when this call started it.
   */
  private async open(id: string, agent: string, input: unknown, flow: SessionFlow, tx?: Store) {
    this.check(agent, input);
    const store = tx ?? this.store;
    const existing = await readSession(store, id);
    if (existing) return same(existing, agent);
    try {
      await store.transaction((t) => this.initiate(t, id, agent, input, flow));
    } catch (error) {
      // a concurrent start of the same id won: it is the session
      const raced = error instanceof ConflictError ? await readSession(store, id) : undefined;
      if (!raced) throw error;
      return same(raced, agent);
    }
    return null;
  }

  private check(agent: string, input: unknown): void {
    if (typeof agent !== 'string' || !this.agents.has(agent))
      throw new ValidationError(
        'agent',
        `no agent is named ${JSON.stringify(agent)} (there are: ${this.names().join(', ')})`,
      );
    checkJson('input', input, this.engine.config.maxPayloadBytes);
  }

  /** SESSION_INITIATED and the session's run (the agent's flow, `given`'s fields replacing it), in transaction `t`. */
  private async initiate(
    t: Store,
    id: string,
    agent: string,
    input: unknown,
    given: SessionFlow,
    event?: Parameters<SessionService['startForEvent']>[1] & { orderingKey: string },
  ): Promise<void> {
    // an inbound event's run has a new id (the intake's, a redrive's): no run has it, so none is read
    const run = event ? undefined : await readRunView(t, id);
    if (run && run.workflow !== SESSION_WORKFLOW)
      throw new ConflictError(`id ${id} is taken by a run of workflow '${run.workflow}'`);
    const ledger = this.ledgerData(agent, event);
    await this.engine.journal.append(
      sessionStream(id),
      [{ type: 'SESSION_INITIATED', data: { agent, input, ...ledger } }],
      { tx: t, expectedVersion: 0 },
    );
    // the agent's flow: its limits' keys (read from the event) go in the run's input, which its limits name
    const flow = agentStart(
      agent,
      this.agents.get(agent)?.flow ?? null,
      event ? (input as FlowEvent) : null,
      event?.orderingKey ?? null,
    );
    const begun = { session_id: id, agent, input, ...(event && { conversation_id: event.conversation_id }) };
    // a budget is checked before a step: a budgeted session keeps the step that ends it (session.ts)
    const start = (given.budget ?? flow.options.budget) === undefined ? { ...begun, end_in_run: true as const } : begun;
    const parked = event?.notBefore === undefined ? {} : { notBefore: event.notBefore };
    const ahead = event && flow.options.orderingKey ? { ahead: event.ahead ?? [] } : {};
    await this.engine.start(this.workflow, flow.keys ? { ...start, flow_keys: flow.keys } : start, {
      ...{ id, tx: t, ...flow.options, ...given, ...ahead, ...parked },
    });
  }

  /** What SESSION_INITIATED carries for the ledger's `agent_runs` row. */
  private ledgerData(
    agent: string,
    event?: { conversation_id: string; user_id: string; event_id: string; input_class: string },
  ) {
    const found = this.agents.get(agent);
    const graph_version = found?.kind === 'code' && found.ledger ? found.ledger.graphVersion : 'v1';
    if (!event) return { graph_version };
    return {
      graph_version,
      conversation_id: event.conversation_id,
      user_id: event.user_id,
      event_id: event.event_id,
      input_class: event.input_class,
    };
  }
}

/**
 * Adds agent sessions to `engine`, over its `store`: registers the session workflow (this process
 * runs sessions when it runs workers) and the `session` projection, and returns the service the
 * API, rules and schedules call. Call it once per engine, with the same agents in every process.
 *
 * @example
 * const service = sessions(engine, store, { agents: [defineAgent('remote', { url: 'http://10.0.0.5/invoke' })], allow: ['10.0.0.5'], reportBaseUrl: 'https://runledger.internal' });
 * const { run_id } = await service.start({ agent: 'sample-agent', input: {}, key: 'event-42' });
 * (await service.events(run_id)).map((e) => e.type); // ['SESSION_INITIATED', 'AGENT_INVOCATION_STARTED', …]
 */
export function sessions(engine: Engine, store: Store, options: SessionsOptions): SessionService {
  const set = agentSet(options);
  const base = options.reportBaseUrl?.replace(/\/+$/, '');
  const reportUrl = (id: string) =>
    publicUrlFor(base, `/sessions/${encodeURIComponent(id)}/report`, `the report_url of session ${id}`);
  const { journal, config } = engine;
  const common = { store, journal, allow: options.allow ?? [], reportUrl, maxPayloadBytes: config.maxPayloadBytes };
  const build = (next: AgentSet, version: string) => sessionWorkflow({ ...common, ...next }, version);
  const workflow = build(set, '1');
  engine.register(workflow);
  projectSessions(engine.journal);
  projectLedger(engine.journal);
  engine.retention.onRunPruned(pruneSession);
  return new SessionService(engine, store, set, workflow, build);
}

function keyedId(key: string): string {
  return hashedId('ses', key, 'hex');
}

function checkSessionId(id: unknown, path: string): string {
  if (typeof id !== 'string' || !SESSION_ID.test(id)) {
    throw new ValidationError(
      path,
      `must be 1 to 200 letters, digits, '.', '_', ':' or '-', starting with a letter or digit (got ${JSON.stringify(id)})`,
    );
  }
  return id;
}

function same(view: SessionView, agent: string): SessionRecord {
  if (view.agent !== agent)
    throw new ConflictError(`session ${view.session_id} exists for agent '${view.agent}', not '${agent}'`);
  return toRecord(view);
}

function accepted(id: string, first: SessionReport, report: SessionReport, duplicate: boolean): ReportResult {
  if (first.status !== report.status || first.error_message !== report.error_message) {
    throw new ConflictError(
      `session ${id} already has a report (${first.status}${first.error_message ? `: ${first.error_message}` : ''})`,
    );
  }
  return { session_id: id, status: first.status, duplicate };
}
