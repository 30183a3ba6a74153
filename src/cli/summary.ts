import { writeFileSync } from 'node:fs';
import { ValidationError } from '../errors.js';
import type { StepRecord } from '../client/client.js';
import { plural } from './output.js';

/* What `start --wait` prints when a run ends: a line per step and where the output is, not the output itself. */

/** How a step ended, as a person reads it: `reused` is a step a retry or rerun took from an earlier execution. */
export type Outcome = 'ok' | 'reused' | StepRecord['status'];

/** An output this long or shorter (JSON characters) is printed in place; a longer one is only located (8 KB on one line helped nobody). */
export const INLINE_OUTPUT = 100;

/** A retry or rerun journals a reused step with `input: { reused_from }`: it did no work, so it has no duration worth showing. */
export function isReused(step: { input: unknown }): boolean {
  return typeof step.input === 'object' && step.input !== null && 'reused_from' in step.input;
}

export function stepOutcome(step: Pick<StepRecord, 'status' | 'input'>): Outcome {
  if (step.status !== 'success') return step.status;
  return isReused(step) ? 'reused' : 'ok';
}

/** `12 ms`, `1.5 s`, `2m 05s`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
}

/** `312 B`, `8.1 KB`, `2.4 MB`. */
export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * One line per step of an execution: name, outcome, duration, attempts when more than one, and the
 * error of a step that did not succeed (an earlier attempt's error of a step that succeeded is history).
 * Branch steps sit indented under their parallel step.
 */
export function stepLines(steps: StepRecord[], colour: (status: string) => string = (s) => s): string[] {
  const name = (s: StepRecord) => `${s.parallel !== undefined ? '  ' : ''}${s.step_id}`;
  const width = Math.max(0, ...steps.map((s) => name(s).length));
  const outcomes = steps.map(stepOutcome);
  const outcomeWidth = Math.max(0, ...outcomes.map((o) => o.length));
  return steps.map((s, i) => {
    const outcome = outcomes[i]!;
    const time = outcome === 'reused' || s.duration_ms === null ? '' : duration(s.duration_ms);
    // a poll step's attempts are its polls
    const attempts =
      s.type === 'poll' && s.attempts > 0
        ? `  (${plural(s.attempts, 'poll')})`
        : s.attempts > 1
          ? `  (${s.attempts} attempts)`
          : '';
    const error = outcome !== 'ok' && outcome !== 'reused' && s.error ? `  — ${cut(s.error)}` : '';
    return `  ${name(s).padEnd(width)}  ${colour(outcome)}${' '.repeat(outcomeWidth - outcome.length)}  ${time}${attempts}${error}`.trimEnd();
  });
}

/**
 * Where a run's output is: in place when short, else its size and the commands that give it whole.
 * With `file`, the output is written there (indented JSON) and the line says so.
 *
 * @example outputLine({ ok: true }, 'runledger executions show ex_1') // 'output: {"ok":true}'
 */
export function outputLine(output: unknown, show: string, file?: string): string | undefined {
  if (output === undefined) return undefined;
  if (file !== undefined) return `output: ${size(writeOutput(file, output))} written to ${file}`;
  const inline = inlineOutput(output);
  if (inline !== undefined) return `output: ${inline}`;
  return `output: ${size(Buffer.byteLength(JSON.stringify(output)))} — ${show} --json, or --output out.json`;
}

/** The output as one line of JSON when it is short enough to print in place, else undefined. */
export function inlineOutput(output: unknown): string | undefined {
  const text = JSON.stringify(output) ?? 'null';
  return text.length <= INLINE_OUTPUT ? text : undefined;
}

/** Writes a run's output to `file` as indented JSON; returns its size in bytes. */
export function writeOutput(file: string, output: unknown): number {
  const text = `${JSON.stringify(output ?? null, null, 2)}\n`;
  try {
    writeFileSync(file, text);
  } catch (error) {
    throw new ValidationError(
      '--output',
      `cannot write ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  return Buffer.byteLength(text);
}

function cut(text: string): string {
  const line = text.split('\n')[0]!;
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}
