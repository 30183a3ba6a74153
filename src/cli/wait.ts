import type { Client } from '../client/client.js';
import { RUN_EVENT } from '../runtime/events.js';
import { isTerminal, type RunStatus } from '../runtime/read/view.js';
import { urlFlags } from './options.js';
import { plural, type Output } from './output.js';
import type { Source } from './source.js';
import { duration, inlineOutput, outputLine, stepLines, writeOutput } from './summary.js';
import { dueAt, timelineLine } from './timeline.js';

export interface WaitOptions {
  json?: boolean;
  /** Write the output to this file (the summary says where it went). */
  output?: string;
  url?: string;
}

/**
 * Follows an execution from its journal over SSE (no polling) until it ends: steps and polls as they
 * end or retry (and when the next attempt is due), each business state it enters with the ETA.
 * Then a summary: its outcome, a line per step, and where its output is (the whole output only with
 * `--json` or `--output`). Exit code 1 unless it succeeded.
 */
export async function waitFor(
  c: Client,
  workflowId: string,
  executionId: string,
  out: Output,
  options: WaitOptions = {},
): Promise<void> {
  const startedAt = new Map<string, number>();
  const reused = new Set<string>();
  let state: string | null = null;
  for await (const event of c.follow(executionId)) {
    if (options.json) continue;
    const { name, attempt, error, retryAt } = event.data;
    const at = Date.parse(event.timestamp);
    if (event.type === RUN_EVENT.stepStarted || event.type === RUN_EVENT.pollStarted) startedAt.set(name, at);
    // a step a retry or rerun reuses did no work: its duration would say nothing
    if (event.type === RUN_EVENT.stepStarted && event.data.input && 'reused_from' in event.data.input) reused.add(name);
    if (event.type === RUN_EVENT.stepStarted && attempt > 1)
      out.line(`  ${name}: ${out.status('running')} (attempt ${attempt})`);
    else if ((event.type === RUN_EVENT.stepStarted || event.type === RUN_EVENT.pollStarted) && event.data.label)
      out.line(`  ${name}: ${event.data.label}`);
    if (event.type === RUN_EVENT.stepCompleted && reused.has(name)) out.line(`  ${name}: reused`);
    else if (event.type === RUN_EVENT.stepCompleted || event.type === RUN_EVENT.pollCompleted) {
      const polls = event.type === RUN_EVENT.pollCompleted ? ` (${plural(attempt, 'poll')})` : '';
      out.line(`  ${name}: ${out.status('success')} ${at - (startedAt.get(name) ?? at)} ms${polls}`);
    }
    if (event.type === RUN_EVENT.stepFailed)
      out.line(
        `  ${name}: ${retryAt === null ? out.status('failed') : `${out.status('retrying')} at ${dueAt(retryAt)}`} — ${error}`,
      );
    if (event.type === RUN_EVENT.pollAttempted && error) out.line(`  ${name}: ${out.status('retrying')} — ${error}`);
    if (event.type === RUN_EVENT.pollFailed) out.line(`  ${name}: ${out.status('failed')} — ${error}`);
    if (event.type === RUN_EVENT.pollTimedOut) out.line(`  ${name}: ${out.status('timed_out')}`);
    const confirmation = cancelLine(event.type, event.data);
    if (confirmation) out.line(confirmation);
    // parallel branches may enter the same state each: it is printed once
    if (event.type === RUN_EVENT.stateChanged && name !== state) {
      state = name;
      const now = await c.execution(workflowId, executionId).catch(() => null);
      // no ETA before there is history, nor once nothing is left (the last state comes before the run's end)
      const eta = !now?.eta_seconds || now.finished_at ? '' : `  ETA ~${Math.ceil(now.eta_seconds)} s`;
      out.line(`state ${name}${eta}`);
    }
  }
  const record = await c.execution(workflowId, executionId);
  if (record.status !== 'success') process.exitCode = 1;
  const run = await c.run(executionId);
  if (options.json) {
    if (options.output !== undefined) writeOutput(options.output, run.output);
    return out.json({ ...record, output: run.output });
  }
  const took = record.finished_at
    ? ` in ${duration(Date.parse(record.finished_at) - Date.parse(record.started_at ?? record.created_at))}`
    : '';
  out.line(
    `execution ${record.execution_id} ${out.status(record.status)}${record.state ? ` ${record.state}` : ''}${took}${record.error ? `: ${record.error}` : ''}`,
  );
  if (record.message) out.line(`message: ${record.message}`);
  for (const line of stepLines(record.steps, out.status)) out.line(line);
  // a run that made no output has no output line, unless --output asked for a file all the same
  const value = (run.output ?? null) === null && options.output === undefined ? undefined : run.output;
  const where = outputLine(value, `runledger executions show ${executionId}${urlFlags(options)}`, options.output);
  if (where) out.line(where);
}

/** A poll's cancel being confirmed (brief 004 §8.1), as the follow prints it; undefined for any other event. */
function cancelLine(type: string, data: { name?: string; confirmed?: boolean; polls?: number; unconfirmed?: string }) {
  const step = data.name?.replace(/:cancel$/, '');
  if (type === RUN_EVENT.compensationConfirming) return `  ${step}: cancel sent, waiting for the service to confirm it`;
  if (type !== RUN_EVENT.compensationCompleted || data.confirmed === undefined) return undefined;
  return data.confirmed
    ? `  ${step}: cancel confirmed (${plural(data.polls ?? 0, 'poll')})`
    : `  ${step}: cancel not confirmed — ${data.unconfirmed}`;
}

/**
 * Prints a run's timeline live until it ends; the exit code is 1 unless it succeeded. Then its
 * outcome, with the output in place when short, else where it is (`--output` writes it). Returns its status.
 */
export async function follow(source: Source, id: string, out: Output, options: WaitOptions = {}): Promise<RunStatus> {
  for await (const e of source.timeline(id, true)) out.line(options.json ? JSON.stringify(e) : timelineLine(e));
  const run = await source.run(id);
  if (run.status !== 'success' && isTerminal(run.status)) process.exitCode = 1;
  const success = run.status === 'success';
  if (options.json) {
    if (options.output !== undefined) writeOutput(options.output, run.output);
    return run.status;
  }
  const inline = success && options.output === undefined ? inlineOutput(run.output) : undefined;
  out.line(
    `run ${id} ${out.status(run.status)}${inline !== undefined ? ` → ${inline}` : run.error ? `: ${run.error}` : ''}`,
  );
  if (inline === undefined && (success || options.output !== undefined))
    out.line(outputLine(run.output ?? null, `runledger runs show ${id}${urlFlags(options)}`, options.output)!);
  return run.status;
}
