import type { Command } from 'commander';
import { workflowDefinitions } from '../app/workflows.js';
import { createEngine } from '../engine.js';
import { diffRuns } from '../runtime/read/diff.js';
import { type RunDiffRecord, runDiffRecord } from '../server/records/run-diff.js';
import { storedNames } from '../server/records/runs.js';
import { client, databaseOf, direct, existingDatabase } from './options.js';
import type { Output } from './output.js';
import { reader } from './read.js';
import { duration } from './summary.js';

const MARK = { same: ' ', changed: '~', added: '+', removed: '-' } as const;
/** A value longer than this is cut in the lines under the table (`--json` has it whole). */
const SHOWN = 60;

/**
 * `runledger runs diff <a> <b>`: two runs aligned step by step, what differs marked (`~` changed, `+` in b only, `-` in
 * a only), then the inputs, outputs and errors that differ. From the server, or the database with `--database`.
 *
 * @example runDiffCommand(program.command('runs'), out) // runledger runs diff run_01J… run_01K…
 */
export function runDiffCommand(runs: Command, out: Output): void {
  reader(runs.command('diff <a> <b>'))
    .description(
      'two runs side by side (a rerun or retry and its original): steps aligned by name in call order, and what differs — status, attempts, duration, input, output, error',
    )
    .action(async (a: string, b: string, options) => {
      const diff = direct(options)
        ? await fromDatabase(databaseOf(options), a, b)
        : await client(options).runDiff(a, b);
      if (options.json) return out.json(diff);
      print(diff, out);
    });
}

async function fromDatabase(location: string, a: string, b: string): Promise<RunDiffRecord> {
  const engine = await createEngine({ database: existingDatabase(location), workers: false });
  try {
    const [x, y] = await Promise.all([engine.runs.view(a), engine.runs.view(b)]);
    return runDiffRecord(diffRuns(x, y), await storedNames(workflowDefinitions(engine), [x, y]));
  } finally {
    await engine.close();
  }
}

function print(diff: RunDiffRecord, out: Output): void {
  for (const [side, run] of [
    ['a', diff.a],
    ['b', diff.b],
  ] as const)
    out.line(`${side}  ${run.id}  ${out.status(run.status)}  ${run.workflow}  ${ms(run.duration_ms)}`);
  out.line(diff.same ? 'nothing differs' : `the runs differ in: ${diff.differs.join(', ') || 'their steps only'}`);
  out.line('');
  out.table(
    ['', 'STEP', 'STATUS', 'ATTEMPTS', 'DURATION', 'DIFFERS'],
    diff.steps.map((s) => [
      MARK[s.change],
      s.name,
      both(s.a?.status, s.b?.status, out.status),
      both(s.a?.attempts, s.b?.attempts),
      both(s.a && ms(s.a.duration_ms), s.b && ms(s.b.duration_ms)),
      s.change === 'added' ? 'in b only' : s.change === 'removed' ? 'in a only' : s.differs.join(', '),
    ]),
    'neither run has steps',
  );
  const values = [
    ...(['input', 'output', 'error'] as const)
      .filter((f) => diff.differs.includes(f))
      .map((f) => `run ${f}: ${shown(diff.a[f])} → ${shown(diff.b[f])}`),
    ...diff.steps.flatMap((s) =>
      (['input', 'output', 'error'] as const)
        .filter((f) => s.differs.includes(f))
        .map((f) => `${s.name} ${f}: ${shown(s.a![f])} → ${shown(s.b![f])}`),
    ),
  ];
  if (values.length > 0) out.line('');
  for (const line of values) out.line(line);
}

/** One value when both runs agree, else `a → b`; `—` for the side without the step. */
function both<T>(a: T | null | undefined, b: T | null | undefined, show: (v: string) => string = (v) => v): string {
  const text = (v: T | null | undefined) => (v === null || v === undefined ? '—' : show(String(v)));
  return a === b ? text(a) : `${text(a)} → ${text(b)}`;
}

function ms(value: number | null): string {
  return value === null ? 'not ended' : duration(value);
}

function shown(value: unknown): string {
  const text = value === undefined ? 'undefined' : JSON.stringify(value);
  return text.length > SHOWN ? `${text.slice(0, SHOWN - 1)}…` : text;
}
