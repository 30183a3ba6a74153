import {
  CancelledError,
  describeError,
  LeaseLostError,
  NonDeterminismError,
  TerminalError,
  TimeoutError,
} from '../errors.js';
import { PassAborted } from '../runtime/pass/pass.js';
import { nextRecorded, workflow, type RecordedCall, type Workflow, type WorkflowContext } from '../runtime/workflow.js';
import { callFunction, type Command, type Memo } from './call.js';
import type { FunctionRecord, FunctionRegistry } from './registry.js';

/** The one code workflow that runs every remote function: each command of the endpoint is one durable call. */
export const FUNCTION_WORKFLOW = 'runledger.function';

/** A run of FUNCTION_WORKFLOW: the function, the version it started on (it keeps calling that one's URL), its input. */
export interface FunctionInput {
  function: string;
  version: string;
  input: unknown;
}

/**
 * The executor of remote functions (docs/protocol.md, "Durable functions"). Each pass replays the calls the journal
 * holds, in its order, through `ctx` (a step's recorded result, a timer, a wait, a child), collecting what the
 * endpoint is told; at the first new call it asks the endpoint for its next command, journals it through `ctx`, and
 * asks again. A step whose attempt failed is retried by asking the endpoint again, inside the step: its attempts,
 * backoff, timeout and cancellation are `ctx.step`'s. A new call the endpoint could not be asked for (it is down)
 * tries the pass again after the run queue's backoff; an answer that contradicts the journal fails the run.
 */
export function functionWorkflow(deps: { registry: FunctionRegistry; allow: string[] }): Workflow<FunctionInput> {
  const self: Workflow<FunctionInput> = workflow(FUNCTION_WORKFLOW, { version: '1' }, async (ctx, run) => {
    const fn = await deps.registry.get(run.function);
    const version = fn?.versions.find((v) => v.version === run.version);
    if (!fn || !version)
      throw new TerminalError(
        `function '${run.function}'${run.version ? ` (version '${run.version}')` : ''} is not registered`,
      );
    // no prototype: a step id is the endpoint's to choose, `constructor` or `__proto__` as much as any other
    const steps: Record<string, Memo> = Object.create(null);
    const ask = (signal: AbortSignal, key: string, retry?: { id: string; attempt: number }) =>
      callFunction(
        { fn, version, runId: ctx.runId, input: run.input, steps, ...(retry ? { retry } : {}) },
        { allow: deps.allow, signal, idempotencyKey: `${ctx.runId}:${key}`, reuse: true },
      );
    for (let call = 1; ; call += 1) {
      const recorded = nextRecorded(ctx);
      const command = recorded ? replayed(recorded, ctx.runId) : await fresh(ctx, call, steps, ask);
      switch (command.op) {
        case 'finish':
          return command.data;
        case 'fail':
          throw Object.assign(new TerminalError(command.error.message), { name: command.error.name });
        case 'step':
          steps[command.id] = await runStep(ctx, fn, call, command.id, recorded ? undefined : command, ask);
          break;
        case 'sleep':
          await ctx.sleep(command.id, command.ms);
          steps[command.id] = { data: null };
          break;
        case 'wait_for_event':
          steps[command.id] = {
            data: await ctx.waitForEvent(command.id, command.timeoutMs === null ? {} : { timeout: command.timeoutMs }),
          };
          break;
        case 'child': {
          const input = recorded ? null : await childInput(deps.registry, command.function, command.input);
          steps[command.id] = await settled(() => ctx.child(self, input!, { id: `${ctx.runId}:${command.id}` }));
          break;
        }
      }
    }
  });
  return self;
}

type Ask = (signal: AbortSignal, key: string, retry?: { id: string; attempt: number }) => Promise<Command>;

/** The next command, from the endpoint: a call the journal has no record of. */
async function fresh(ctx: WorkflowContext, call: number, steps: Record<string, Memo>, ask: Ask): Promise<Command> {
  let command: Command;
  try {
    command = await ask(ctx.signal, `call-${call}`);
  } catch (error) {
    // down or slow (not a refusal): this pass is tried again after the run queue's backoff, nothing journaled
    if (error instanceof TerminalError) throw error;
    throw new PassAborted(error);
  }
  if ('id' in command && Object.hasOwn(steps, command.id))
    throw new NonDeterminismError(
      `run ${ctx.runId}: the function's call ${call} is ${command.op} '${command.id}', ` +
        'an id its earlier calls used: ids name one call each',
    );
  return command;
}

/** A step: journaled from the endpoint's answer, or, retried, by asking the endpoint to run it again. */
async function runStep(
  ctx: WorkflowContext,
  fn: FunctionRecord,
  call: number,
  name: string,
  answered: Extract<Command, { op: 'step' }> | undefined,
  ask: Ask,
): Promise<Memo> {
  // what fails the run rather than the step: a refusal or no command in a retry's answer, or another call than this
  let ends: Error | undefined;
  const memo = await settled(() =>
    ctx.step(
      name,
      async (step) => {
        const c =
          step.attempt === 1 && answered
            ? answered
            : await ask(step.signal, name, { id: name, attempt: step.attempt }).catch((error: unknown) => {
                if (error instanceof TerminalError) ends = error;
                throw error;
              });
        if (c.op !== 'step' || c.id !== name) {
          ends = new NonDeterminismError(
            `run ${ctx.runId}: the journal has step '${name}' at call ${call}; ` +
              `the function's next call is ${describe(c)}`,
          );
          throw new TerminalError(ends.message);
        }
        if ('data' in c) return c.data;
        const error = c.retryable ? new Error(c.error.message) : new TerminalError(c.error.message);
        throw Object.assign(error, { name: c.error.name });
      },
      { retry: { maxAttempts: fn.retries } },
    ),
  );
  if (ends) throw ends;
  return memo;
}

/** The call's result as the endpoint is told it; the errors that end the pass or the run go on up. */
async function settled(call: () => Promise<unknown>): Promise<Memo> {
  try {
    return { data: (await call()) ?? null };
  } catch (error) {
    const ending =
      error instanceof CancelledError ||
      error instanceof TimeoutError ||
      error instanceof NonDeterminismError ||
      error instanceof LeaseLostError ||
      error instanceof PassAborted;
    if (ending) throw error;
    const e = error as Error;
    return { error: { name: e.name ?? 'Error', message: e.message ?? describeError(error) } };
  }
}

/** A call the journal holds, as the command that made it (its values come from the journal, not from here). */
function replayed(recorded: RecordedCall, runId: string): Command {
  switch (recorded.kind) {
    case 'step':
      return { op: 'step', id: recorded.name, data: null };
    case 'sleep':
      return { op: 'sleep', id: recorded.name, ms: 0 };
    case 'wait':
      return { op: 'wait_for_event', id: recorded.name, timeoutMs: null };
    case 'child': {
      const started = recorded.events[0]?.data as { childId?: string } | undefined;
      return { op: 'child', id: (started?.childId ?? '').slice(runId.length + 1), function: '', input: null };
    }
    default:
      throw new NonDeterminismError(`run ${runId}: the journal holds a ${recorded.kind} call no function makes`);
  }
}

async function childInput(registry: FunctionRegistry, name: string, input: unknown): Promise<FunctionInput> {
  const fn = await registry.get(name);
  if (!fn) throw new TerminalError(`the child function '${name}' is not registered`);
  return { function: name, version: fn.version, input };
}

function describe(c: Command): string {
  if (c.op === 'fail') return `fail (${c.error.name}: ${c.error.message})`;
  return 'id' in c ? `${c.op} '${c.id}'` : c.op;
}
