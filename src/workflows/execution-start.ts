import { ValidationError } from '../errors.js';
import type { StartOptions } from '../runtime/start/start.js';
import type { StoredWorkflow } from './definitions.js';
import { executionFlow, type StoredFlow } from './flow.js';
import type { ExecutionInput } from './interpreter.js';
import { matchValue, parseMatch } from './steps/configs.js';
import { render } from './template/render.js';

/**
 * What an execution's run starts with: its input, the flow keys resolved again from its trigger data (a rerun may
 * have been given other data), and the start options its definition asks for (flow control, timeout, cancel_on).
 *
 * @example const { input, options } = executionStart(executionInput, 'ex_01J…'); await runtime.start(wf, input, { id, ...options })
 */
export function executionStart(
  base: ExecutionInput,
  id: string,
  traceparent?: string,
): { input: ExecutionInput; options: StartOptions } {
  // a batched execution's rerun keeps its batch's list of trigger data: its keys are its first's
  const trigger = Array.isArray(base.trigger_data) ? (base.trigger_data[0] ?? {}) : base.trigger_data;
  const flow = executionFlow(base.flow ?? {}, base.workflow_id, trigger, base.priority);
  const { flow_keys: _k, ...rest } = base;
  const input: ExecutionInput = Object.keys(flow.keys).length > 0 ? { ...rest, flow_keys: flow.keys } : rest;
  const options: StartOptions = {
    ...flow.options,
    ...(input.timeout_seconds ? { timeout: input.timeout_seconds * 1000 } : {}),
    ...(input.cancel_on ? { cancelOn: cancelOn(input, id) } : {}),
    ...(traceparent ? { traceparent } : {}),
  };
  return { input, options };
}

/** A stored workflow's flow fields (flow.ts), as its definition has them. */
export function flowOf(wf: StoredWorkflow): StoredFlow {
  return {
    ...(wf.concurrency ? { concurrency: wf.concurrency } : {}),
    ...(wf.priority === undefined ? {} : { priority: wf.priority }),
    ...(wf.throttle ? { throttle: wf.throttle } : {}),
    ...(wf.debounce ? { debounce: wf.debounce } : {}),
    ...(wf.batch ? { batch: wf.batch } : {}),
    ...(wf.budget ? { budget: wf.budget } : {}),
  };
}

/** The execution's `cancel_on`, each match's value rendered with its trigger data and id: what its start records. */
function cancelOn(
  input: ExecutionInput,
  id: string,
): Array<{ event: string; match?: { path: string; value: unknown } }> {
  const scope = {
    trigger: input.trigger_data,
    steps: {},
    secrets: {},
    execution: { id },
    workflow: { id: input.workflow_id },
  };
  return (input.cancel_on ?? []).map((c, i) => {
    if (c.match === undefined) return { event: c.event };
    const { path, value } = parseMatch(c.match);
    try {
      return { event: c.event, match: { path, value: matchValue(value, (text) => render(text, scope)) } };
    } catch (error) {
      throw new ValidationError(`cancel_on[${i}].match`, (error as Error).message);
    }
  });
}
