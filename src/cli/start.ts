import type { Command, OptionValues } from 'commander';
import { ApiError, type Client } from '../client/client.js';
import { ValidationError } from '../errors.js';
import { asFlagError, flowFlags, flowOptions, storedRefuses } from './flow-flags.js';
import { hint, inputOption, inputValue } from './hints.js';
import { client, remote, urlFlags } from './options.js';
import type { Output } from './output.js';
import { serverSource } from './source.js';
import { type Interruptible, TERMINAL_REASON, whileInterruptible } from './run-interrupt.js';
import { follow, waitFor } from './wait.js';
import { findByName } from './workflows.js';

/** Which workflows an old verb looked at: `run` stored ones, `runs start` code ones; `start` both. */
export type Kind = 'stored' | 'code';

/** The flags of `start` (and of the old `run` and `runs start`, which keep working with a hint). */
export function startFlags(cmd: Command): Command {
  inputOption(remote(cmd), "the input, JSON (default: {}); a stored workflow's is its trigger data, an object", [
    'data',
  ])
    .option('--id <id>', "a code workflow's run id: the same id again returns that run and starts nothing")
    .option('--idempotency-key <key>', 'the same key again returns the first run and starts nothing')
    .option(
      '--wait',
      'follow the run until it ends, then print a line per step and where the output is (exit code 1 unless it succeeds)',
    )
    .option('--output <file>', 'with --wait: write the output to this file (JSON)');
  return flowOptions(cmd);
}

/** `runledger start <workflow>`, and the old `run <workflow>` (stored workflows) with a hint. */
export function startCommands(program: Command, out: Output): void {
  startFlags(program.command('start <workflow>'))
    .description(
      'start a run: of a stored workflow (its name or id) or of a code workflow the server registered (its name); --wait follows it',
    )
    .action((workflow: string, options) => start(workflow, options, out));
  startFlags(program.command('run <workflow>', { hidden: true }))
    .description('the old name of start (stored workflows)')
    .action((workflow: string, options) => {
      hint('use runledger start');
      return start(workflow, options, out, 'stored');
    });
}

/**
 * Starts a run of `ref`: the server is asked for a stored workflow with that id or name first; when
 * there is none, a code workflow of that name is started. A name that is neither is one error
 * listing both kinds.
 */
export async function start(ref: string, options: OptionValues, out: Output, only?: Kind): Promise<void> {
  const input = inputValue(options, ['data'], '{}');
  const flow = flowFlags(options);
  const c = client(options);
  const stored = only === 'code' ? undefined : await storedWorkflow(c, ref);
  if (stored !== undefined) {
    storedRefuses(flow);
    return execute(c, stored, input, options, out, flow.priority);
  }
  if (only === 'stored')
    throw new ValidationError('<workflow>', `no stored workflow is named '${ref}' (runledger workflows list)`);
  let started: Awaited<ReturnType<Client['startRun']>>;
  try {
    started = await c.startRun(ref, input, {
      ...(options.id ? { id: options.id } : {}),
      ...(options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {}),
      ...flow,
    });
  } catch (error) {
    throw asFlagError(only === undefined ? await noSuchWorkflow(c, ref, error) : error);
  }
  if (options.json && !options.wait) return out.json(started);
  out.line(
    started.duplicate
      ? `run ${started.run_id} exists (${started.status}): nothing new started`
      : `run ${started.run_id} started`,
  );
  const followCommand = `runledger events ${started.run_id}${urlFlags(options)} --follow`;
  if (!options.wait) return out.line(`follow it:  ${followCommand}`);
  await whileInterruptible(
    terminal(out, followCommand, async () => void (await c.cancelRun(started.run_id, TERMINAL_REASON))),
    () => follow(serverSource(c), started.run_id, out, options),
  );
}

async function execute(
  c: Client,
  workflowId: string,
  input: unknown,
  options: OptionValues,
  out: Output,
  priority?: number,
): Promise<void> {
  if (options.id !== undefined)
    throw new ValidationError(
      '--id',
      "a stored workflow's execution is named by the server: use --idempotency-key to make a repeat start nothing",
    );
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new ValidationError('--input', "a stored workflow's input (its trigger data) must be a JSON object");
  const started: { execution_id: string; status: string; duplicate?: boolean } = await c.execute(
    workflowId,
    { trigger_data: input, ...(priority === undefined ? {} : { priority }) },
    options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {},
  );
  if (options.json && !options.wait) return out.json(started);
  if (!options.json)
    out.line(
      `execution ${started.execution_id} ${started.duplicate ? `exists (${out.status(started.status)}): nothing new started` : out.status(started.status)}`,
    );
  const followCommand = `runledger events ${started.execution_id}${urlFlags(options)} --follow`;
  if (!options.wait) return options.json ? undefined : out.line(`follow it:  ${followCommand}`);
  const cancel = async () => void (await c.cancel(workflowId, started.execution_id, TERMINAL_REASON));
  await whileInterruptible(terminal(out, followCommand, cancel), () =>
    waitFor(c, workflowId, started.execution_id, out, options),
  );
}

/** Ctrl-C while `--wait` follows a run: asked on this process's terminal (see whileInterruptible). */
function terminal(out: Output, followCommand: string, cancel: () => Promise<void>): Interruptible {
  return {
    terminal: Boolean(process.stdin.isTTY),
    input: process.stdin,
    prompt: process.stderr,
    line: (text) => out.line(text),
    cancel,
    followCommand,
    exit: (code) => process.exit(code),
  };
}

/** The id of the stored workflow `ref` names (its id or its name), or undefined when there is none. */
async function storedWorkflow(c: Client, ref: string): Promise<string | undefined> {
  if (!ref.startsWith('wf_')) return findByName(c, ref);
  try {
    return (await c.workflow(ref)).id;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return undefined;
    throw error;
  }
}

/** The server's "no code workflow is named" turned into one error naming every workflow there is; any other error as it was. */
async function noSuchWorkflow(c: Client, ref: string, error: unknown): Promise<unknown> {
  const problem =
    error instanceof ApiError && error.status === 400 ? error.problems.find((p) => p.path === 'workflow') : undefined;
  if (!problem || !/^no code workflow is named/.test(problem.message)) return error;
  const code = /registered: (.+)\)$/.exec(problem.message)?.[1] ?? 'none (runledger serve --workflows <module>)';
  // by name, as the code workflows are: a list of names to choose from, not the newest first
  const stored = (await c.workflows({ limit: 100 })).workflows.map((w) => w.name).sort();
  return new ValidationError(
    '<workflow>',
    `no workflow is named '${ref}': stored workflows: ${stored.length ? stored.join(', ') : 'none (runledger workflows apply <file>)'}; code workflows: ${code}`,
  );
}
