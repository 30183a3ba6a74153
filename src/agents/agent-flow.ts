import { createHash } from 'node:crypto';
import type { Duration } from '../duration.js';
import { ValidationError } from '../errors.js';
import { checkFlow } from '../runtime/flow-check.js';
import { fieldOf } from '../runtime/match.js';
import type { Budget, ConcurrencyLimit, FlowOptions } from '../runtime/flow.js';
import type { StartOptions } from '../runtime/start/start.js';

/**
 * Flow control of an agent's runs (issue 40): keyed concurrency over the intake event, a per-conversation debounce,
 * batches of intake events, a priority and a budget. A key is an expression over the intake event
 * (`event.conversation_id`, `event.user_id`, `event.payload.tenant`) or a constant (`openai`); it is counted per agent
 * (`scope: 'global'`: shared with every agent and workflow naming the same key). Checked by the one check
 * (`checkFlow`) at define time.
 */

/** At most `limit` runs of the agent per key in flight (a run holds its slot from its start to its end). */
export interface AgentLimit {
  /** `event.<field>` or a constant; default: one key for every run of the agent. */
  key?: string;
  limit: number;
  onLimit?: ConcurrencyLimit['onLimit'];
  /** Waiting runs take turns by this expression over the event (`event.user_id`). */
  fairBy?: string;
  /** `'agent'` (default): counted per agent; `'global'`: shared with every agent and workflow naming the key. */
  scope?: 'agent' | 'global';
}

/**
 * Arrivals in one conversation within `period` of each other join one run, which starts once the conversation has
 * been quiet for `period` (at most `maxWait` after the window's first arrival) and sees every arrival of its window.
 */
export interface AgentDebounce {
  /** Only `event.conversation_id` (the default): a run handles the events of one conversation. */
  key?: string;
  period: Duration;
  maxWait?: Duration;
}

/**
 * Intake events of one key join one run, whose input's `events` holds them in arrival order: it begins once it holds
 * `maxSize` events, or `timeout` after its first with fewer (agent-batch.ts).
 */
export interface AgentBatch {
  /** `event.<field>` or a constant; default: the conversation (`event.conversation_id`). */
  key?: string;
  /** 1…10,000 events per run. */
  maxSize: number;
  /** 1 s…1 day from the batch's first event. */
  timeout: Duration;
}

export interface AgentFlowOptions {
  concurrency?: AgentLimit[];
  /** -100…100, default 0: higher runs are let in first. */
  priority?: number;
  debounce?: AgentDebounce;
  batch?: AgentBatch;
  /** Caps per run; a ledger agent's tool calls and the usage its tools report (`defineTool({ usage })`) count. */
  budget?: Budget;
}

/** The fields an intake event has: a key names one of them (or a field inside `payload`). */
const EVENT_FIELDS = ['conversation_id', 'user_id', 'source', 'input_type', 'payload'];
const EVENT_KEY = /^event(\.[A-Za-z_$][\w$-]*)+$/;

function eventKey(key: unknown, path: string): string | undefined {
  // an agent's key reads its intake event: a workflow's `input.…` would be read as a constant
  if (typeof key === 'string' && (key === 'input' || key.startsWith('input.') || key.startsWith('input[')))
    throw new ValidationError(
      path,
      `an agent's key reads the intake event: write 'event.${key.slice(6)}', not '${key}'`,
    );
  if (typeof key !== 'string' || !(key === 'event' || key.startsWith('event.') || key.startsWith('event[')))
    return undefined;
  const field = key.split('.')[1];
  if (!EVENT_KEY.test(key) || !EVENT_FIELDS.includes(field ?? '') || (field !== 'payload' && key.split('.').length > 2))
    throw new ValidationError(
      path,
      `'${key}' is not a field of the intake event ` +
        `(${EVENT_FIELDS.map((f) => `event.${f}`).join(', ')}, or a field inside event.payload)`,
    );
  return `input.${key.slice('event.'.length)}`;
}

/**
 * An agent's `flow`, checked: a ValidationError names the field and the limit (`flow.concurrency[0].limit: must be a
 * whole number from 1 to 1000000`).
 *
 * @example checkAgentFlow({ concurrency: [{ key: 'event.user_id', limit: 2 }], debounce: { period: '2s' } })
 */
export function checkAgentFlow(raw: unknown, path = 'flow'): AgentFlowOptions {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ValidationError(path, 'must be an object');
  const o = raw as Record<string, unknown>;
  const fields = ['concurrency', 'priority', 'debounce', 'batch', 'budget'];
  for (const field of Object.keys(o))
    if (!fields.includes(field)) throw new ValidationError(`${path}.${field}`, `is not one of ${fields.join(', ')}`);
  const limits = o.concurrency;
  const concurrency = Array.isArray(limits)
    ? limits.map((c: unknown, i) => {
        const at = `${path}.concurrency[${i}]`;
        if (typeof c !== 'object' || c === null) return c;
        const l = c as Record<string, unknown>;
        if (l.scope !== undefined && l.scope !== 'agent' && l.scope !== 'global')
          throw new ValidationError(`${at}.scope`, "must be 'agent' or 'global'");
        const key = eventKey(l.key, `${at}.key`) ?? l.key;
        const fairBy = eventKey(l.fairBy, `${at}.fairBy`) ?? l.fairBy;
        if (typeof fairBy === 'string' && !fairBy.startsWith('input.'))
          throw new ValidationError(`${at}.fairBy`, "must be an expression over the event, like 'event.user_id'");
        const { scope: _scope, ...rest } = l;
        return { ...rest, ...(key === undefined ? {} : { key }), ...(fairBy === undefined ? {} : { fairBy }) };
      })
    : limits;
  let debounce = o.debounce as Record<string, unknown> | undefined;
  if (debounce !== undefined && typeof debounce === 'object' && debounce !== null) {
    const { key, ...rest } = debounce;
    if (key !== undefined && key !== 'event.conversation_id')
      throw new ValidationError(
        `${path}.debounce.key`,
        `must be 'event.conversation_id': a run handles the events of one conversation (got ${JSON.stringify(key)})`,
      );
    if (rest.mode !== undefined)
      throw new ValidationError(`${path}.debounce.mode`, 'is not an option of an agent: its run sees every arrival');
    debounce = rest;
  }
  let batch = o.batch as Record<string, unknown> | undefined;
  if (batch !== undefined && typeof batch === 'object' && batch !== null) {
    if (batch.into !== undefined)
      throw new ValidationError(
        `${path}.batch.into`,
        "is not an option of an agent: its run's input's events hold the batch",
      );
    batch = {
      ...batch,
      ...(batch.key === undefined ? {} : { key: eventKey(batch.key, `${path}.batch.key`) ?? batch.key }),
    };
  }
  const checked = checkFlow(
    {
      ...(concurrency === undefined ? {} : { concurrency: concurrency as ConcurrencyLimit[] }),
      ...(o.priority === undefined ? {} : { priority: o.priority as number }),
      ...(debounce === undefined ? {} : { debounce: debounce as unknown as FlowOptions['debounce'] }),
      ...(batch === undefined ? {} : { batch: batch as unknown as FlowOptions['batch'] }),
      ...(o.budget === undefined ? {} : { budget: o.budget as Budget }),
    },
    path,
  );
  const out: AgentFlowOptions = {};
  if (checked.concurrency)
    out.concurrency = checked.concurrency.map((c, i) => {
      const given = (limits as AgentLimit[])[i]!;
      return {
        ...(given.key === undefined ? {} : { key: given.key }),
        limit: c.limit,
        ...(c.onLimit === undefined ? {} : { onLimit: c.onLimit }),
        ...(given.fairBy === undefined ? {} : { fairBy: given.fairBy }),
        ...(given.scope === undefined ? {} : { scope: given.scope }),
      };
    });
  if (checked.priority !== undefined) out.priority = checked.priority;
  if (checked.debounce) {
    const { period, maxWait } = checked.debounce;
    out.debounce = { period, ...(maxWait === undefined ? {} : { maxWait }) };
  }
  if (checked.batch) {
    const { maxSize, timeout } = checked.batch;
    const key = (o.batch as AgentBatch).key;
    out.batch = { ...(key === undefined ? {} : { key }), maxSize, timeout };
  }
  if (checked.budget) out.budget = checked.budget;
  return Object.freeze(out);
}

/** An inbound event's fields a key reads. */
export interface FlowEvent {
  conversation_id: string;
  user_id: string;
  source: string;
  input_type: string;
  payload: unknown;
}

/**
 * The text of the event's field an expression (`event.payload.tenant`) names; an event without it is refused
 * (ValidationError naming `path`), never put under a shared key.
 *
 * @example readEvent(event, 'event.user_id', 'flow.batch.key') // 'u-42'
 */
export function readEvent(event: FlowEvent | null, expression: string, path: string): string {
  const value = fieldOf(event, expression.slice('event.'.length));
  if (value === undefined || value === null || value === '')
    throw new ValidationError(path, `'${expression}' is not in the event: the run has no key to count it under`);
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** What a session run of the agent starts with: its limits' keys (in its input) and its start options. */
export interface AgentStart {
  /** Each limit's key and group, resolved: the run's limits read them (`input.flow_keys.k0`). */
  keys: Record<string, string> | null;
  options: Pick<StartOptions, 'concurrency' | 'priority' | 'budget' | 'orderingKey'>;
}

const MAX_KEY = 200;

/**
 * A resolved key as a slot's name; a longer one (a long conversation id) keeps its start and a hash.
 *
 * @example slotName('agent:support:user_id=42') // 'agent:support:user_id=42'
 */
export function slotName(text: string): string {
  if (text.length <= MAX_KEY) return text;
  return `${text.slice(0, MAX_KEY - 17)}#${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
}

/**
 * The start of a session run of `agent` under its flow: for an inbound event's run (`event` given) every limit; for a
 * session started otherwise (`POST /sessions`, a rule) the limits whose key names no event field. A conversation
 * limit (`event.conversation_id`) replaces the conversation's ordering key (one run at a time), so a conversation can
 * run `limit` at once. An event that lacks a key's field is refused (ValidationError naming the key).
 *
 * @example agentStart('support', flow, event, 'conversation:c-1').options.concurrency[0].key // 'input.flow_keys.k0'
 */
export function agentStart(
  agent: string,
  flow: AgentFlowOptions | null,
  event: FlowEvent | null,
  orderingKey: string | null,
): AgentStart {
  const ordering = orderingKey === null ? {} : { orderingKey };
  if (!flow) return { keys: null, options: ordering };
  const keys: Record<string, string> = {};
  const concurrency: ConcurrencyLimit[] = [];
  let conversationLimited = false;
  (flow.concurrency ?? []).forEach((c, i) => {
    const at = `flow.concurrency[${i}]`;
    const onEvent = c.key?.startsWith('event.') || c.fairBy?.startsWith('event.');
    if (onEvent && !event) return;
    if (c.key === 'event.conversation_id') conversationLimited = true;
    const value =
      c.key === undefined
        ? `agent:${agent}`
        : c.key.startsWith('event.')
          ? c.scope === 'global'
            ? readEvent(event, c.key, `${at}.key`)
            : `agent:${agent}:${c.key.slice('event.'.length)}=${readEvent(event, c.key, `${at}.key`)}`
          : c.scope === 'global'
            ? c.key
            : `agent:${agent}:${c.key}`;
    keys[`k${i}`] = slotName(value);
    if (c.fairBy !== undefined) keys[`f${i}`] = slotName(readEvent(event, c.fairBy, `${at}.fairBy`));
    concurrency.push({
      key: `input.flow_keys.k${i}`,
      limit: c.limit,
      scope: 'global',
      ...(c.onLimit === undefined ? {} : { onLimit: c.onLimit }),
      ...(c.fairBy === undefined ? {} : { fairBy: `input.flow_keys.f${i}` }),
    });
  });
  return {
    keys: concurrency.length === 0 ? null : keys,
    options: {
      ...(conversationLimited ? {} : ordering),
      ...(concurrency.length === 0 ? {} : { concurrency }),
      ...(flow.priority === undefined ? {} : { priority: flow.priority }),
      ...(flow.budget === undefined ? {} : { budget: flow.budget }),
    },
  };
}
