import { createHash } from 'node:crypto';
import type { Engine } from '../engine.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import { checkJson, checkName } from '../json.js';
import { PARKED, type Window } from '../runtime/start/debounce.js';
import { keyStream } from '../runtime/start/keyed.js';
import type { Open } from '../runtime/start/batch.js';
import type { Store } from '../storage/store.js';
import { batchStream, keepBatch, meetBatch, nextBatch, stillOpen } from './agent-batch.js';
import { keepWindow, meetWindow, nextWindow } from './agent-debounce.js';
import { conversationStream, laterArrivals, readConversation } from './conversation.js';
import type { ReceivedEvent } from './ledger-projection.js';
import type { SessionService } from './service.js';

/** An inbound agent event, as a webhook delivers it. */
export interface AgentEventInput {
  conversation_id: string;
  user_id: string;
  source: string;
  input_type: string;
  payload: unknown;
  /** The delivery's id (a WhatsApp message id, say); without one, a hash of (source, conversation_id, payload). */
  idempotency_key?: string;
  /** Default: the configured default agent. */
  agent?: string;
}

export interface IntakeResult {
  event_id: string;
  run_id: string;
  /** true: this key was received before; nothing was written and the ids are the first delivery's. */
  duplicate: boolean;
  /** The arrival policy's decision: a run of its own, or joined to a waiting one (its conversation's, its batch's). */
  decision: 'queued' | 'coalesced';
}

/** Concurrent arrivals in one conversation race for its stream's version; the losers read again and retry. */
const INTAKE_ATTEMPTS = 100;

/** An event's arrival as the intake decided it, between naming its run and starting it. */
interface Arrival {
  received: ReceivedEvent;
  policy: string;
  conversationVersion: number;
  joined: boolean;
  /** For an agent with a debounce: its conversation's window after this arrival (agent-debounce.ts). */
  window?: { stream: string; value: Window; opened: boolean };
  /** For an agent with a batch: its key's batch after this arrival (agent-batch.ts). */
  batch?: { stream: string; value: Open; opened: boolean };
}

/**
 * The ledger's writes of inbound events: receiving one (once per idempotency key, starting its run
 * in its conversation's turn or joining the waiting one) and redriving a failed one. The agent
 * ledger (ledger.ts) is their door.
 *
 * @example
 * const intake = new Intake(engine, store, service, 'sample-agent');
 * await intake.receive({
 *   conversation_id: 'c-1', user_id: 'u-1', source: 'whatsapp_webhook', input_type: 'text', payload: { text: 'hi' },
 * });
 */
export class Intake {
  constructor(
    private readonly engine: Engine,
    private readonly store: Store,
    private readonly sessions: SessionService,
    private readonly defaultAgent: string,
  ) {}

  /**
   * Receives an event, once per idempotency key: the first delivery writes the event and (unless it
   * joins a waiting run) starts its run, in one transaction; any later one, also concurrent, returns
   * the same ids with `duplicate: true` and writes nothing.
   */
  async receive(body: AgentEventInput): Promise<IntakeResult> {
    const input = this.check(body);
    for (let attempt = 1; ; attempt++) {
      try {
        // the key's stream (`agent-event:<key>`) holds the event as received: it names the run
        let arrival: Arrival | undefined;
        const { duplicate, data } = await this.engine.runtime.startKeyed({
          scope: 'agent-event',
          key: input.idempotency_key,
          name: async (tx) => {
            arrival = await this.arrive(tx, input);
            return { runId: arrival.received.run_id, event: { type: 'agent.event.received', data: arrival.received } };
          },
          begin: (tx) => this.accept(tx, arrival!),
        });
        const e = data as ReceivedEvent;
        return { event_id: e.id, run_id: e.run_id, duplicate, decision: e.decision };
      } catch (error) {
        // another delivery of the key, or another arrival in the conversation, committed first
        if (!(error instanceof ConflictError) || attempt >= INTAKE_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * Math.min(50, attempt * 5)));
      }
    }
  }

  /**
   * A failed event again: a new run handles it, journaled on the event's key stream with who and
   * why. The event keeps its place in its conversation: the run waits in front of the runs of later
   * arrivals that have not started, behind the run whose turn it is (a later event that already
   * started or ran goes first: the redriven one runs next). An event that is not failed is a
   * ConflictError. The operator's retry of an agent run is this too (run-retry.ts).
   */
  async redrive(
    id: string,
    actor: { by: string; reason: string | null },
  ): Promise<{ run_id: string; retry_of: string }> {
    return this.store.transaction(async (tx) => {
      const before = await tx.agentEventGet({ id });
      if (!before) throw new NotFoundError(`agent event ${id} not found`);
      if (before.status !== 'failed')
        throw new ConflictError(`agent event ${id} is ${before.status}; only a failed event can be redriven`);
      const stream = keyStream('agent-event', before.idempotency_key);
      const [last] = await this.engine.journal.readStream(stream, { backwards: true, limit: 1, tx });
      const run_id = newId('ses');
      // locks the conversation (as an arrival or a run's start does) before its waiting runs are read
      await this.engine.journal.append(
        conversationStream(before.conversation_id),
        [
          {
            type: 'agent.event.requeued',
            data: { event_id: id, run_id, agent: before.agent, retry_of: before.run_id },
          },
        ],
        { tx },
      );
      const ahead = await laterArrivals(tx, before);
      const input = {
        event_id: id,
        conversation_id: before.conversation_id,
        user_id: before.user_id,
        source: before.source,
        input_type: before.input_type,
        payload: before.payload,
      };
      await this.sessions.startForEvent(tx, {
        id: run_id,
        agent: before.agent,
        input,
        conversation_id: before.conversation_id,
        user_id: before.user_id,
        event_id: id,
        input_class: before.input_type,
        ahead,
      });
      // a concurrent redrive of the same event appended first: this one loses (409) and starts nothing
      await this.engine.journal.append(
        stream,
        [{ type: 'agent.event.redriven', data: { event_id: id, run_id, retry_of: before.run_id, ...actor } }],
        { tx, expectedVersion: last?.version ?? 0 },
      );
      return { run_id, retry_of: before.run_id };
    });
  }

  private check(b: AgentEventInput): Required<AgentEventInput> {
    const given = (b ?? {}) as Partial<AgentEventInput>;
    const text = (path: keyof AgentEventInput, max = 200) => checkName(path, given[path], max) as string;
    const agent = given.agent === undefined ? this.defaultAgent : text('agent', 100);
    if (!this.sessions.has(agent))
      throw new ValidationError(
        'agent',
        `no agent is named ${JSON.stringify(agent)} (there are: ${this.sessions.names().join(', ')})`,
      );
    if (given.payload === undefined) throw new ValidationError('payload', 'is required');
    checkJson('payload', given.payload, this.engine.config.maxPayloadBytes);
    const source = text('source');
    const conversation_id = text('conversation_id');
    const idempotency_key =
      given.idempotency_key === undefined
        ? `hash:${createHash('sha256')
            .update(canonical([source, conversation_id, given.payload]))
            .digest('hex')}`
        : text('idempotency_key');
    return {
      conversation_id,
      user_id: text('user_id'),
      source,
      input_type: text('input_type'),
      payload: given.payload,
      idempotency_key,
      agent,
    };
  }

  /**
   * How an event arrives, decided in the intake's transaction before anything is written: queued for a new run, or
   * joining a waiting one. With a batch, an event joins its key's open batch or opens one (`ledger.arrival` does not
   * apply: a batch's run holds `maxSize` events at most).
   */
  private async arrive(tx: Store, e: Required<AgentEventInput>): Promise<Arrival> {
    const found = this.sessions.agent(e.agent);
    const arrival = found?.kind === 'code' && found.ledger ? found.ledger.arrival : 'queue';
    const debounce = found?.flow?.debounce;
    const batch = found?.flow?.batch;
    // the batch key's lock first: the arrivals of one key then read their conversation one after another
    const gathering = batch ? await meetBatch(this.engine.journal, tx, batchStream(e.agent, batch, e)) : undefined;
    const view = await readConversation(tx, e.conversation_id);
    const waiting = view.waiting[e.agent];
    // a debounce window still open takes the arrival; else `coalesce` joins the run waiting for its turn
    const meeting = debounce
      ? await meetWindow(this.engine.journal, tx, { agent: e.agent, conversationId: e.conversation_id, waiting })
      : undefined;
    const joined = gathering
      ? gathering.open?.runId
      : (meeting?.open?.runId ?? (arrival === 'coalesce' ? waiting : undefined));
    const event_id = newId('evt');
    const run_id = joined ?? newId('ses');
    const window =
      meeting && debounce && (meeting.open || !joined)
        ? { stream: meeting.stream, value: nextWindow(meeting, debounce, run_id), opened: !meeting.open }
        : undefined;
    const gathered =
      gathering && batch
        ? { stream: gathering.stream, value: nextBatch(gathering, batch, run_id), opened: !gathering.open }
        : undefined;
    const policy = window ? 'debounce' : gathered ? 'batch' : arrival;
    const decision = joined ? 'coalesced' : 'queued';
    const received: ReceivedEvent = {
      id: event_id,
      conversation_id: e.conversation_id,
      user_id: e.user_id,
      source: e.source,
      input_type: e.input_type,
      payload: e.payload,
      idempotency_key: e.idempotency_key,
      agent: e.agent,
      run_id,
      decision,
    };
    return {
      received,
      policy,
      conversationVersion: view.version,
      joined: joined !== undefined,
      ...(window && { window }),
      ...(gathered && { batch: gathered }),
    };
  }

  /**
   * After the key is taken (its event received): the conversation's turn and, unless it joined one, the event's run.
   */
  private async accept(tx: Store, a: Arrival): Promise<void> {
    const e = a.received;
    await this.engine.journal.append(
      conversationStream(e.conversation_id),
      [
        {
          type: `agent.event.${e.decision}`,
          data: { event_id: e.id, run_id: e.run_id, agent: e.agent, policy: a.policy },
        },
      ],
      { tx, expectedVersion: a.conversationVersion },
    );
    if (!a.joined) {
      const input = {
        event_id: e.id,
        conversation_id: e.conversation_id,
        user_id: e.user_id,
        source: e.source,
        input_type: e.input_type,
        payload: e.payload,
      };
      await this.sessions.startForEvent(tx, {
        id: e.run_id,
        agent: e.agent,
        input,
        conversation_id: e.conversation_id,
        user_id: e.user_id,
        event_id: e.id,
        input_class: e.input_type,
        ...(a.window || (a.batch && stillOpen(a.batch.value)) ? { notBefore: PARKED } : {}),
      });
    }
    if (a.window) await keepWindow(this.engine, tx, a.window.stream, a.window.value, a.window.opened);
    if (a.batch) await keepBatch(this.engine, tx, a.batch.stream, a.batch.value, a.batch.opened);
  }
}

/** JSON with object keys sorted: the same payload hashes the same whatever its key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
