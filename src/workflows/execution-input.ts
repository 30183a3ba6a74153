import { ValidationError } from '../errors.js';
import { checkJson, checkName } from '../json.js';
import { checkFlow } from '../runtime/flow-check.js';
import type { StoredWorkflow } from './definitions.js';
import { flowOf } from './execution-start.js';
import { executionFlow } from './flow.js';
import type { ExecutionInput } from './interpreter.js';
import { isTemplate, templateConflict } from './templates.js';

/** The run input of an execution of `wf`, checked: a disabled workflow or bad trigger data throws before anything is written. */
export function executionInput(
  wf: StoredWorkflow,
  request: { trigger_data?: unknown; trigger_type?: string; priority?: number },
  maxPayloadBytes: number,
): ExecutionInput {
  if (isTemplate(wf)) throw templateConflict(wf);
  if (!wf.enabled) throw new ValidationError('enabled', `workflow ${wf.id} is disabled`);
  const trigger = request.trigger_data ?? {};
  if (typeof trigger !== 'object' || trigger === null || Array.isArray(trigger))
    throw new ValidationError('trigger_data', 'must be a JSON object');
  checkJson('trigger_data', trigger, maxPayloadBytes);
  const triggerType =
    request.trigger_type === undefined ? 'manual' : checkName('trigger_type', request.trigger_type, 64);
  const priority = request.priority === undefined ? undefined : checkFlow({ priority: request.priority }).priority;
  const flow = flowOf(wf);
  // a key the trigger data lacks is refused here, before anything is written
  const { keys } = executionFlow(flow, wf.id, trigger as Record<string, unknown>, priority);
  return {
    workflow_id: wf.id,
    workflow_name: wf.name,
    version: wf.version,
    steps: wf.steps,
    trigger_type: triggerType,
    trigger_data: trigger as Record<string, unknown>,
    ...(wf.states ? { states: wf.states } : {}),
    ...(wf.on_error ? { on_error: wf.on_error } : {}),
    ...(wf.messages ? { messages: wf.messages } : {}),
    ...(wf.timeout_seconds ? { timeout_seconds: wf.timeout_seconds } : {}),
    ...(wf.on_failure ? { on_failure: wf.on_failure } : {}),
    ...(wf.cancel_on ? { cancel_on: wf.cancel_on } : {}),
    ...(Object.keys(flow).length > 0 ? { flow } : {}),
    ...(priority === undefined ? {} : { priority }),
    ...(Object.keys(keys).length > 0 ? { flow_keys: keys } : {}),
  };
}
