import { z } from 'zod';
import type { Problem } from '../errors.js';
import { ERROR_CLASSES, type ErrorClass } from '../observe/error-class.js';
import type { RunView, StepView } from '../runtime/read/view.js';
import type { ExecutionInput } from './interpreter.js';
import type { ExecutionStatus, StepRecord } from './record.js';
import { stepReferences, templateProblems, usesRoot } from './template/parse.js';
import { render, type Scope } from './template/render.js';

/** The longest sentence a definition may hold, and the longest one shown (a template can make it longer). */
export const MAX_MESSAGE = 500;

// the length is checked with the states and classes (messageProblems), so a long sentence does not hide their problems
const sentence = z.string().min(1).describe(`at most ${MAX_MESSAGE} characters`);

/**
 * What a person is told, by state and by error class (brief 004 §13.2): plain sentences beside the
 * technical error, templated like the steps (`{{trigger.…}}`, `{{steps.<id>.output.…}}`, `{{execution.id}}`).
 */
export const messagesSchema = z
  .object({
    states: z
      .record(z.string(), sentence)
      .optional()
      .describe("by business state (one of states.names): 'FAILED_RENDERING': 'We could not render your document.'"),
    errors: z
      .record(z.string(), sentence)
      .optional()
      .describe(
        "by error class of the failed step: timeout, network, 429, 5xx, 4xx, validation (400 or 422), other, or an HTTP status ('404')",
      ),
  })
  .strict();

export type Messages = z.output<typeof messagesSchema>;

/** The error classes a message can name, besides an HTTP status: the classifier's, and `validation` (a 400 or 422). */
export const MESSAGE_CLASSES: readonly string[] = [...ERROR_CLASSES, 'validation'];
const STATUS = /^[1-5][0-9]{2}$/;

/**
 * What is wrong with a definition's `messages`: a state not among `states.names`, an error class
 * not known, a sentence longer than MAX_MESSAGE, a template that does not parse, reads a secret or the callback URL, or names a step
 * the workflow does not have. Each problem carries the sentence's path.
 *
 * @example messageProblems({ states: { names: ['DONE'] }, messages: { states: { DONE: 'Done.', GONE: 'Gone.' } }, steps }) // [{ path: 'messages.states.GONE', … }]
 */
export function messageProblems(definition: {
  states?: { names: string[] } | undefined;
  messages?: Messages | undefined;
  steps: { id: string; type: string; config: unknown }[];
}): Problem[] {
  const { messages } = definition;
  if (!messages) return [];
  const problems: Problem[] = [];
  const names = definition.states?.names;
  for (const state of Object.keys(messages.states ?? {})) {
    const path = `messages.states.${state}`;
    if (!names) problems.push({ path, message: `names state '${state}', but the workflow declares no states` });
    else if (!names.includes(state))
      problems.push({ path, message: `'${state}' is not one of states.names (${names.join(', ')})` });
  }
  for (const key of Object.keys(messages.errors ?? {}))
    if (!MESSAGE_CLASSES.includes(key) && !STATUS.test(key))
      problems.push({
        path: `messages.errors.${key}`,
        message: `'${key}' is not an error class (${MESSAGE_CLASSES.join(', ')}) or an HTTP status such as '404'`,
      });
  const ids = new Set(allSteps(definition.steps));
  for (const [group, map] of [
    ['states', messages.states],
    ['errors', messages.errors],
  ] as const) {
    for (const [key, text] of Object.entries(map ?? {})) {
      const path = `messages.${group}.${key}`;
      if (text.length > MAX_MESSAGE)
        problems.push({ path, message: `is ${text.length} characters long; at most ${MAX_MESSAGE} are allowed` });
      problems.push(...templateProblems(text, path));
      for (const root of ['secrets', 'callback'])
        if (usesRoot(text, root)) problems.push({ path, message: `a message cannot read {{${root}.…}}` });
      for (const ref of stepReferences(text))
        if (!ids.has(ref)) problems.push({ path, message: `refers to steps.${ref}, which does not exist` });
    }
  }
  return problems;
}

function allSteps(steps: { id: string; type: string; config: unknown }[]): string[] {
  return steps.flatMap((s) => {
    const branches = s.type === 'parallel' ? (s.config as { branches: Record<string, typeof steps> }).branches : {};
    return [s.id, ...allSteps(Object.values(branches).flat())];
  });
}

/** The keys a failure's message is looked up by, most specific first: its status, `validation`, its class. */
export function messageKeys(failure: { errorClass: ErrorClass; status?: number | undefined }): string[] {
  const { errorClass, status } = failure;
  const keys = status === undefined ? [] : [String(status)];
  if (status === 400 || status === 422) keys.push('validation');
  keys.push(errorClass);
  return keys;
}

/** The messages of one execution, rendered against its trigger data and its steps' outputs. */
export interface ExecutionMessages {
  /** A failed step's sentence by its error class, or undefined. */
  step(ran: StepView): string | undefined;
  /** The sentence for the execution's current state, else (failed or partly failed) for its first failed step's error class, else null. */
  execution(status: ExecutionStatus, state: string | null, steps: StepRecord[]): string | null;
}

const NONE: ExecutionMessages = { step: () => undefined, execution: () => null };

/**
 * The messages of the execution `view` of the stored workflow input `input`. A sentence whose
 * template does not render (a path not there, without `default`) is shown as written.
 *
 * @example executionMessages(view).execution('failed', 'FAILED_RENDERING', steps) // 'We could not render your document.'
 */
export function executionMessages(view: RunView): ExecutionMessages {
  const input = view.input as ExecutionInput;
  const messages = input.messages;
  if (!messages) return NONE;
  let scope: Scope | undefined;
  const shown = (text: string | undefined): string | undefined => {
    if (text === undefined) return undefined;
    scope ??= {
      trigger: input.trigger_data,
      steps: Object.fromEntries(
        view.steps.filter((s) => s.status === 'success').map((s) => [s.name, { output: s.output }]),
      ),
      secrets: {},
      execution: { id: view.id },
      workflow: { id: input.workflow_id },
    };
    let out: unknown;
    try {
      out = render(text, scope);
    } catch {
      return text;
    }
    const written = typeof out === 'string' ? out : JSON.stringify(out ?? '');
    return written.length > MAX_MESSAGE ? `${written.slice(0, MAX_MESSAGE - 1)}…` : written;
  };
  const byError = (failure: { errorClass: ErrorClass; status?: number | undefined }) => {
    const key = messageKeys(failure).find((k) => messages.errors?.[k] !== undefined);
    return key === undefined ? undefined : messages.errors![key];
  };
  return {
    step: (ran) => {
      if (ran.status !== 'failed' && ran.status !== 'timed_out') return undefined;
      const errorClass = ran.status === 'timed_out' ? 'timeout' : (ran.errorClass ?? 'other');
      return shown(byError({ errorClass, status: ran.errorStatus }));
    },
    execution: (status, state, steps) => {
      const byState = state === null ? undefined : messages.states?.[state];
      if (byState !== undefined) return shown(byState) ?? null;
      if (status !== 'failed' && status !== 'partial_success') return null;
      const failed = steps.find((s) => s.type !== 'parallel' && s.message !== undefined)?.message;
      // the execution's own timeout (timeout_seconds) fails it without a failed step
      const timedOut = /^(StepTimedOutError|TimeoutError):/.test(view.error ?? '');
      return failed ?? (timedOut ? shown(byError({ errorClass: 'timeout' })) : undefined) ?? null;
    },
  };
}
