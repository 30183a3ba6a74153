import { z } from 'zod';
import {
  ConflictError,
  describeError,
  NotFoundError,
  TerminalError,
  ValidationError,
  type Problem,
} from '../errors.js';
import { newId } from '../ids.js';
import type { Journal } from '../journal/journal.js';
import type { Store, StoredEvent } from '../storage/store.js';
import { zodProblems } from '../problems.js';
import { EVENT_ROUTED, type Envelope, type EventMatch } from './events.js';
import { mapInput, validateInputMapping } from './input.js';
import { matches, validatePattern, type Pattern } from './pattern.js';
import { checkTarget, type RunStarter, type Target } from './target.js';

export const RULE_VIEW = 'rule';
const NAME_VIEW = 'rule-name';
const ruleStream = (id: string) => `rule:${id}`;

/** A rule without `input` hands its runs the whole envelope, as EventBridge does by default. */
export const DEFAULT_RULE_INPUT = '$';

/** What `POST /rules` takes. `pattern`, `target` and `input` are checked beyond their shape by `Rules.create`. */
export const ruleRequest = z
  .object({
    name: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[\w.-]+$/, 'may hold only letters, digits and . _ -'),
    description: z.string().max(512).optional(),
    pattern: z.record(z.string(), z.unknown()),
    target: z.object({ workflow: z.string().optional(), agent: z.string().optional() }).catchall(z.unknown()),
    input: z.unknown().optional(),
    enabled: z.boolean().default(true),
  })
  .strict();

export type RuleRequest = z.input<typeof ruleRequest>;

export interface Rule {
  id: string;
  name: string;
  description?: string;
  pattern: Pattern;
  target: Target;
  input: unknown;
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

/** The projection row: the rule, and the journal position of its creation (it matches only later events). */
interface StoredRule extends Rule {
  since: number;
}

/** Errors that say "this rule cannot start its target", not "the database failed": recorded on the event, not retried. */
const PERMANENT = [ValidationError, NotFoundError, TerminalError];

/**
 * Event rules: each a pattern (EventBridge semantics), a target and an input mapping. A rule is
 * the stream `rule:<id>` (`rule.created`, `rule.updated`, `rule.enabled`, `rule.disabled`, `rule.deleted`); the
 * `rule` projection is its current state. Names are unique. `route` is the routing subscription's
 * handler. One instance per journal (its constructor registers the projection).
 *
 * @example
 * const rule = await rules.create({ name: 'paid', pattern: { source: ['shop'] }, target: { workflow: 'fulfil' }, input: { order: '$.detail.order' } });
 */
export class Rules {
  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    private readonly starter: RunStarter,
  ) {
    journal.project(
      ['rule.created', 'rule.updated', 'rule.enabled', 'rule.disabled', 'rule.deleted'],
      async (event, tx) => {
        const id = event.streamId.slice('rule:'.length);
        const at = new Date(event.timestamp).toISOString();
        if (event.type === 'rule.created') {
          const rule = {
            ...(event.data as Omit<Rule, 'id' | 'created_at' | 'updated_at'>),
            id,
            created_at: at,
            updated_at: at,
            since: event.position,
          };
          await tx.projectionPut({ name: RULE_VIEW, key: id, value: rule });
          await tx.projectionPut({ name: NAME_VIEW, key: rule.name, value: { rule_id: id } });
          return;
        }
        const rule = (await tx.projectionGet({ name: RULE_VIEW, key: id })) as StoredRule | undefined;
        if (!rule) return;
        if (event.type === 'rule.deleted') {
          await tx.projectionDelete({ name: RULE_VIEW, key: id });
          await tx.projectionDelete({ name: NAME_VIEW, key: rule.name });
        } else if (event.type === 'rule.updated') {
          // the event holds the whole new definition: a description it lacks is gone
          const { description: _description, ...kept } = rule;
          await tx.projectionPut({
            name: RULE_VIEW,
            key: id,
            value: { ...kept, ...(event.data as object), updated_at: at },
          });
        } else {
          await tx.projectionPut({
            name: RULE_VIEW,
            key: id,
            value: { ...rule, enabled: event.type === 'rule.enabled', updated_at: at },
          });
        }
      },
    );
  }

  /** Checks everything (every problem of the pattern and the input with its path, then the target) and stores the rule. A taken name → ConflictError. */
  async create(body: unknown): Promise<Rule> {
    const { enabled, ...checked } = await this.check(body);
    const data = { ...checked, enabled };
    const name = data.name;
    const id = newId('rule');
    await this.store.transaction(async (tx) => {
      // the append locks the name's stream row: a concurrent create of the same name waits, then sees this one
      await this.journal.append(`rule-name:${name}`, [{ type: 'rule.named', data: { rule_id: id } }], { tx });
      const taken = (await tx.projectionGet({ name: NAME_VIEW, key: name })) as { rule_id: string } | undefined;
      if (taken) throw new ConflictError(`a rule named '${name}' exists (${taken.rule_id})`);
      await this.journal.append(ruleStream(id), [{ type: 'rule.created', data }], { tx, expectedVersion: 0 });
    });
    return this.get(id);
  }

  /** The rule `body` describes, every problem of it reported at once (the pattern's and the input's with their paths). */
  private async check(body: unknown) {
    const parsed = ruleRequest.safeParse(body);
    const problems: Problem[] = parsed.success
      ? []
      : zodProblems(parsed.error).filter((p) => !p.path.startsWith('pattern') && !p.path.startsWith('target'));
    const raw = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    problems.push(...validatePattern(raw.pattern));
    if (raw.input !== undefined) problems.push(...validateInputMapping(raw.input));
    const target = await checkTarget(this.starter, raw.target, problems);
    if (problems.length > 0 || !parsed.success || !target)
      throw ValidationError.of(problems.length ? problems : [{ path: '(body)', message: 'is not a rule' }]);
    const { name, description, pattern, enabled } = parsed.data;
    return {
      name,
      ...(description === undefined ? {} : { description }),
      pattern,
      target,
      input: raw.input === undefined ? DEFAULT_RULE_INPUT : raw.input,
      enabled,
    };
  }

  /**
   * Replaces the rule's description, pattern, target and input (checked as `create` checks them; its name and
   * whether it is enabled stay): events routed from now on are matched by the new pattern.
   */
  async update(id: string, body: unknown): Promise<Rule> {
    const { name, enabled: _enabled, ...data } = await this.check(body);
    await this.store.transaction(async (tx) => {
      const rule = (await tx.projectionGet({ name: RULE_VIEW, key: id })) as StoredRule | undefined;
      if (!rule) throw new NotFoundError(`rule ${id} not found`);
      if (name !== rule.name)
        throw new ValidationError('name', `cannot change ('${rule.name}'): create a rule of the new name instead`);
      await this.journal.append(ruleStream(id), [{ type: 'rule.updated', data }], { tx });
    });
    return this.get(id);
  }

  async get(id: string): Promise<Rule> {
    const rule = (await this.store.projectionGet({ name: RULE_VIEW, key: id })) as StoredRule | undefined;
    if (!rule) throw new NotFoundError(`rule ${id} not found`);
    return publicRule(rule);
  }

  /** Newest first (ids are ULIDs: id descending is creation order); `last_key` of a page continues after it, null on the last page. */
  async list(
    options: { limit?: number; last_key?: string | null } = {},
  ): Promise<{ rules: Rule[]; count: number; last_key: string | null }> {
    const limit = options.limit ?? 100;
    const rows = await this.store.projectionList({
      name: RULE_VIEW,
      limit: limit + 1,
      backwards: true,
      ...(options.last_key ? { before: options.last_key } : {}),
    });
    const rules = rows.slice(0, limit).map((r) => publicRule(r.value as StoredRule));
    return { rules, count: rules.length, last_key: rows.length > limit ? (rules.at(-1)?.id ?? null) : null };
  }

  async setEnabled(id: string, enabled: boolean): Promise<Rule> {
    await this.store.transaction(async (tx) => {
      if (!(await tx.projectionGet({ name: RULE_VIEW, key: id }))) throw new NotFoundError(`rule ${id} not found`);
      await this.journal.append(ruleStream(id), [{ type: enabled ? 'rule.enabled' : 'rule.disabled', data: {} }], {
        tx,
      });
    });
    return this.get(id);
  }

  /** Deletes the rule: events routed from now on no longer match it; runs it started go on. */
  async delete(id: string): Promise<void> {
    await this.store.transaction(async (tx) => {
      if (!(await tx.projectionGet({ name: RULE_VIEW, key: id }))) throw new NotFoundError(`rule ${id} not found`);
      await this.journal.append(ruleStream(id), [{ type: 'rule.deleted', data: {} }], { tx });
    });
  }

  /**
   * The routing subscription's handler for one `event.received`, in the transaction that advances
   * its cursor: every enabled rule created before the event whose pattern matches starts one run
   * (key `<event id>:<rule id>`), and `event.routed` records the matches. A rule whose target
   * cannot start (deleted workflow, unknown agent) is recorded with its error; any other failure
   * throws, and the subscription tries the event again. An event routed before is left alone.
   */
  async route(event: StoredEvent, tx: Store): Promise<EventMatch[]> {
    const [last] = await this.journal.readStream(event.streamId, { backwards: true, limit: 1, tx });
    if (!last || last.type === EVENT_ROUTED) return [];
    const envelope = event.data as Envelope;
    const found: EventMatch[] = [];
    for (const rule of await this.enabled(tx)) {
      if (rule.since > event.position || !matches(rule.pattern, envelope)) continue;
      const match = { rule_id: rule.id, rule_name: rule.name };
      try {
        const started = await this.starter.start({
          target: rule.target,
          input: mapInput(rule.input, envelope),
          key: `${envelope.id}:${rule.id}`,
          tx,
          trigger_type: 'event',
          ...traced(event),
        });
        found.push({ ...match, ...started });
      } catch (error) {
        if (!PERMANENT.some((kind) => error instanceof kind)) throw error;
        found.push({ ...match, run_id: null, kind: null, error: describeError(error) });
      }
    }
    await this.journal.append(
      event.streamId,
      [{ type: EVENT_ROUTED, data: { received_position: event.position, matches: found } }],
      { tx, expectedVersion: last.version },
    );
    return found;
  }

  /** Every enabled rule, read through `tx` (its view of the rules is the one the event is routed by). */
  private async enabled(tx: Store): Promise<StoredRule[]> {
    const rules: StoredRule[] = [];
    for (let after: string | undefined; ; ) {
      const rows = await tx.projectionList({ name: RULE_VIEW, limit: 500, ...(after === undefined ? {} : { after }) });
      for (const row of rows) if ((row.value as StoredRule).enabled) rules.push(row.value as StoredRule);
      if (rows.length < 500) return rules;
      after = rows.at(-1)!.key;
    }
  }
}

function publicRule({ since: _since, ...rule }: StoredRule): Rule {
  return rule;
}

/** The trace context an event was sent with, for the runs it starts. */
function traced(event: StoredEvent): { traceparent?: string } {
  const traceparent = event.metadata.traceparent;
  return typeof traceparent === 'string' ? { traceparent } : {};
}
