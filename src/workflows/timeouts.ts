import { ValidationError, type Problem } from '../errors.js';
import type { StepDefinition } from './schema.js';

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600 };
const SHAPE = /^(\d+(?:\.\d+)?)(s|m|h)$/;
/** The limits the definition schema sets: a poll's `max_wait_seconds`, every other step's `timeout_seconds`. */
const MAX_WAIT = 7 * 24 * 3600;
const MAX_TIMEOUT = 3600;

/** A duration as a rerun takes it: `"90s"`, `"10m"`, `"2h"`, or a number of seconds. Null when it is none of those. */
export function durationSeconds(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && value > 0 ? value : null;
  if (typeof value !== 'string') return null;
  const match = SHAPE.exec(value.trim());
  if (!match) return null;
  const seconds = Number(match[1]) * UNITS[match[2]!]!;
  return seconds > 0 ? seconds : null;
}

/**
 * The steps of a rerun with longer (or shorter) timeouts (brief 004 §7.2: "retry with longer
 * timeout"): a poll's is its `max_wait_seconds` (how long it polls before it times out), any other
 * step's its `timeout_seconds` (an attempt's, or a callback's wait). Every problem at once, each
 * named `timeouts.<step id>`: a step that is not there, a parallel step (set its branch steps'), a
 * duration that does not read or is past the schema's limit.
 *
 * @example rerunTimeouts(input.steps, { layout_wait: '10m' }) // { steps (layout_wait polls for up to 600 s), seconds: { layout_wait: 600 } }
 */
export function rerunTimeouts(
  steps: StepDefinition[],
  timeouts: Record<string, unknown>,
): { steps: StepDefinition[]; seconds: Record<string, number> } {
  const byId = new Map<string, StepDefinition>();
  for (const step of steps) {
    byId.set(step.id, step);
    if (step.type === 'parallel')
      for (const list of Object.values(step.config.branches)) for (const inner of list) byId.set(inner.id, inner);
  }
  const problems: Problem[] = [];
  const seconds = new Map<string, number>();
  for (const [id, value] of Object.entries(timeouts)) {
    const path = `timeouts.${id}`;
    const step = byId.get(id);
    const parsed = durationSeconds(value);
    if (!step)
      problems.push({ path, message: `'${id}' is not a step of this execution (${[...byId.keys()].join(', ')})` });
    else if (step.type === 'parallel')
      problems.push({ path, message: 'a parallel step has no timeout of its own: name the steps of its branches' });
    else if (parsed === null)
      problems.push({
        path,
        message: `must be a duration such as "90s", "10m" or "2h", or a number of seconds (got ${JSON.stringify(value)})`,
      });
    else if (parsed > (step.type === 'poll' ? MAX_WAIT : MAX_TIMEOUT))
      problems.push({
        path,
        message: `must be at most ${step.type === 'poll' ? "7 days (a poll's max_wait_seconds)" : '1h (timeout_seconds)'}`,
      });
    else seconds.set(id, parsed);
  }
  if (problems.length > 0) throw ValidationError.of(problems);
  const apply = (step: StepDefinition): StepDefinition => {
    if (step.type === 'parallel')
      return {
        ...step,
        config: {
          ...step.config,
          branches: Object.fromEntries(
            Object.entries(step.config.branches).map(([name, list]) => [name, list.map(apply)]),
          ),
        },
      } as StepDefinition;
    const value = seconds.get(step.id);
    if (value === undefined) return step;
    if (step.type === 'poll') return { ...step, config: { ...step.config, max_wait_seconds: value } };
    return { ...step, timeout_seconds: value };
  };
  return { steps: steps.map(apply), seconds: Object.fromEntries(seconds) };
}
