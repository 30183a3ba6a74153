import type { Engine } from '../engine.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { joinedBy } from '../runtime/start/batch.js';
import { keyStream, runIdFor } from '../runtime/start/keyed.js';
import type { Workflow } from '../runtime/workflow.js';
import type { Store } from '../storage/store.js';
import type { WorkflowService } from '../workflows/service.js';
import type { RunStarter, Started, Target } from './target.js';

/** What the agent ledger offers rules and schedules: start a session run, idempotent by `key`. */
export interface AgentStarter {
  start(p: { agent: string; input: unknown; key: string; tx?: Store }): Promise<{ run_id: string }>;
  has(name: string): boolean;
}

export interface RunStarterOptions {
  engine: Engine;
  /** The engine's store: an execution starts in a transaction of it when the caller gives none. */
  store: Store;
  /** Stored workflows: a target `{ workflow: 'wf_…' }` starts an execution. */
  workflows: WorkflowService;
  agents?: AgentStarter;
}

/** Stored workflow ids look like this; anything else names a code workflow. */
const STORED_ID = /^wf_/;
/** The engine's own workflows (stored executions, sessions, functions): a target never names them. */
const BUILT_IN = /^runledger\./;

/** The run id a code workflow started for `key` gets (the key's stream names it; the id is the same on every try). */
export { runIdFor };

/**
 * Starts what rules and schedules name: a stored workflow's execution (kind `execution`), a code
 * workflow's run (kind `workflow`) or an agent session (kind `session`), each idempotent by `key`
 * and inside the caller's transaction when given one. A code workflow is looked up at each start:
 * the version registered last with `engine` (a reload of `runledger dev` adds one). Every check
 * happens before the first write, so a ValidationError or NotFoundError leaves the transaction as it was.
 *
 * @example
 * const starter = createRunStarter({ engine, store, workflows }); // engine.register(onboard) first
 * await starter.start({ target: { workflow: 'onboard' }, input: { user: 'u1' }, key: 'evt_1:rule_1' });
 */
export function createRunStarter(options: RunStarterOptions): RunStarter {
  const { engine, store, workflows, agents } = options;

  const codeWorkflow = (name: string, path: string): Workflow => {
    const wf = BUILT_IN.test(name) ? undefined : engine.runtime.registered(name);
    if (wf) return wf;
    const known = engine.runtime.names().filter((n) => !BUILT_IN.test(n));
    throw new ValidationError(
      path,
      `names no stored workflow (ids start with wf_) and no code workflow${known.length ? ` (code workflows: ${known.join(', ')})` : ' (none are registered)'}: '${name}'`,
    );
  };
  const agent = (name: string, path: string): void => {
    if (!agents) throw new ValidationError(path, 'no agents are registered');
    if (!agents.has(name)) throw new ValidationError(path, `names no registered agent: '${name}'`);
  };

  return {
    async check(target, path) {
      const shape = parseTarget(target, path);
      if ('agent' in shape) agent(shape.agent, `${path}.agent`);
      else if (STORED_ID.test(shape.workflow)) {
        await workflows.definitions.get(shape.workflow).catch((error) => {
          throw error instanceof NotFoundError
            ? new ValidationError(`${path}.workflow`, `names no stored workflow: '${shape.workflow}'`)
            : error;
        });
      } else codeWorkflow(shape.workflow, `${path}.workflow`);
      return shape;
    },

    async start({ target, input, key, tx, trigger_type, traceparent }): Promise<Started> {
      const trace = traceparent ? { traceparent } : {};
      if ('agent' in target) {
        agent(target.agent, 'target.agent');
        const { run_id } = await agents!.start({ agent: target.agent, input, key, ...(tx ? { tx } : {}) });
        return { run_id, kind: 'session' };
      }
      if (STORED_ID.test(target.workflow)) {
        const request = { trigger_data: input, trigger_type: trigger_type ?? 'trigger', ...trace };
        // a prefix of its own: these keys never meet the Idempotency-Key of a POST …/execute
        const started = await (tx ?? store).transaction((t) =>
          workflows.executions.startIn(t, target.workflow, request, `trigger:${key}`),
        );
        return { run_id: started.execution_id, kind: 'execution' };
      }
      const wf = codeWorkflow(target.workflow, 'target.workflow');
      // a batched or debounced start joins its key's run, whose id is known once joined
      const joins = wf.flow?.batch !== undefined || wf.flow?.debounce !== undefined;
      const { runId } = await engine.runtime.startKeyed({
        scope: 'trigger-run',
        key,
        ...(tx ? { tx } : {}),
        name: joins
          ? async (t) => ({
              // a start of this key that committed first is the run: its append finds it, nothing joins (batch.ts)
              runId:
                (await joinedBy(engine.journal, t, wf, input, {}, keyStream('trigger-run', key))) ??
                (await engine.runtime.start(wf, input, { tx: t, ...trace })).id,
            })
          : async () => ({ runId: runIdFor(key) }),
        begin: async (t, id) => void (joins || (await engine.runtime.start(wf, input, { id, tx: t, ...trace }))),
      });
      return { run_id: runId, kind: 'workflow' };
    },
  };
}

/** `{ workflow: string }` or `{ agent: string }`, exactly one, each a non-empty name of at most 200 characters. */
function parseTarget(target: unknown, path: string): Target {
  if (typeof target !== 'object' || target === null || Array.isArray(target))
    throw new ValidationError(path, 'must be { "workflow": "<id or name>" } or { "agent": "<name>" }');
  const keys = Object.keys(target);
  const extra = keys.find((k) => k !== 'workflow' && k !== 'agent');
  if (extra !== undefined)
    throw new ValidationError(`${path}.${extra}`, 'is not a target field (use workflow or agent)');
  if (keys.length !== 1) throw new ValidationError(path, 'must name exactly one of workflow or agent');
  const [field] = keys as ['workflow' | 'agent'];
  const name = (target as Record<string, unknown>)[field];
  if (typeof name !== 'string' || name.length === 0 || name.length > 200)
    throw new ValidationError(`${path}.${field}`, 'must be a non-empty string of at most 200 characters');
  return field === 'agent' ? { agent: name } : { workflow: name };
}
