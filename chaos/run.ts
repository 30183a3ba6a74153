import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkJournal } from './check.js';
import { ScenarioContext, type BackendName } from './lib/context.js';
import { emptyFigures, failures, figuresLine, SCENARIO_LIMIT_MS, type Figures } from './lib/figures.js';
import { ROOT } from './lib/proc.js';
import { seedFor } from './lib/random.js';
import { scenarios } from './scenarios/index.js';

interface Outcome {
  scenario: string;
  backend: BackendName;
  passed: boolean;
  seconds: number;
  figures: Figures;
  failures: string[];
}

/** The runner gives a scenario this long past its own limit before it calls it hung. */
const GRACE_MS = 30_000;

/**
 * `npm run chaos [-- --short] [--only <name>[:<backend>]] [--seed <n>] [--keep]`: runs each scenario on
 * each of its backends, one at a time, prints a line of figures per run and a table, writes
 * chaos/results/latest.json, and exits 1 when any figure that must be zero is not.
 */
async function main(argv: string[]): Promise<number> {
  const short = argv.includes('--short');
  const only = option(argv, '--only');
  const seed = Number(option(argv, '--seed') ?? 1);
  const runs = scenarios.flatMap((s) => s.backends.map((backend) => ({ s, backend })));
  const chosen =
    only === undefined ? runs : runs.filter(({ s, backend }) => only === s.name || only === `${s.name}:${backend}`);
  if (chosen.length === 0) {
    console.error(
      `no scenario '${only}'; there are: ${runs.map(({ s, backend }) => `${s.name}:${backend}`).join(' ')}`,
    );
    return 2;
  }
  const started = Date.now();
  const outcomes: Outcome[] = [];
  let current: ScenarioContext | null = null;
  // stopped from outside (a CI timeout, ^C): no runledger process, tmpfs or cluster stays behind
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      const ctx = current;
      void (async () => {
        if (ctx) {
          for (const child of ctx.children) await child.kill();
          await ctx.cleanup(true);
        }
        process.exit(130);
      })();
    });
  }
  for (const { s, backend } of chosen) {
    const label = `${s.name}:${backend}`;
    const ctx = new ScenarioContext(
      s.name,
      backend,
      short,
      seedFor(seed, label),
      short ? SCENARIO_LIMIT_MS / 2 : SCENARIO_LIMIT_MS,
      (line) => console.log(`  [${label}] ${line}`),
    );
    current = ctx;
    console.log(`▶ ${label}${short ? ' (short)' : ''}`);
    const t0 = Date.now();
    let figures: Figures;
    let brokeOff = false;
    try {
      figures = await bounded(
        s.run(ctx),
        ctx.deadline - Date.now() + GRACE_MS,
        `${label} still running ${GRACE_MS / 1000}s past its limit`,
      );
    } catch (error) {
      figures = emptyFigures();
      brokeOff = true;
      figures.notes.push(
        `the scenario broke off: ${error instanceof Error ? error.stack?.split('\n').slice(0, 4).join(' | ') : String(error)}`,
      );
    }
    for (const child of ctx.children) await child.kill();
    figures.crashed += ctx.crashes.length;
    figures.notes.push(...ctx.crashes.slice(0, 3));
    for (const database of ctx.databases) {
      try {
        const report = await checkJournal(database);
        figures.journal += report.problems.length;
        figures.notes.push(
          `journal: ${report.events} events, ${report.runs} runs, ${report.tasks} tasks, ${report.problems.length} problems`,
          ...report.problems.slice(0, 5),
        );
      } catch (error) {
        figures.journal += 1;
        figures.notes.push(`journal checker could not read ${database}: ${String(error)}`);
      }
    }
    const broken = failures(figures);
    if (brokeOff) broken.unshift('broke off');
    if (broken.length > 0) figures.notes.push(`logs and files kept in ${ctx.dir}`);
    await ctx.cleanup(broken.length > 0 || argv.includes('--keep'));
    const outcome: Outcome = {
      scenario: s.name,
      backend,
      passed: broken.length === 0,
      seconds: Math.round((Date.now() - t0) / 1000),
      figures,
      failures: broken,
    };
    outcomes.push(outcome);
    console.log(
      `${outcome.passed ? 'PASS' : 'FAIL'} ${label.padEnd(28)} ${figuresLine(figures)} (${outcome.seconds}s)${broken.length ? `  ← ${broken.join(', ')}` : ''}`,
    );
    for (const note of figures.notes) console.log(`     ${note}`);
  }
  printTable(outcomes);
  const passed = outcomes.filter((o) => o.passed).length;
  mkdirSync(join(ROOT, 'chaos/results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'chaos/results/latest.json'),
    JSON.stringify(
      {
        seed,
        short,
        startedAt: new Date(started).toISOString(),
        seconds: Math.round((Date.now() - started) / 1000),
        passed,
        failed: outcomes.length - passed,
        outcomes,
      },
      null,
      2,
    ),
  );
  console.log(
    `chaos: ${passed} passed, ${outcomes.length - passed} failed (${Math.round((Date.now() - started) / 1000)}s)`,
  );
  return passed === outcomes.length ? 0 : 1;
}

function printTable(outcomes: Outcome[]): void {
  const head = [
    'scenario',
    'backend',
    'lost',
    'dup',
    'same-key',
    'stuck',
    'failed',
    '5xx',
    'leaked',
    'crashed',
    'recovery',
    'journal',
    'secs',
    'result',
  ];
  const rows = outcomes.map((o) => {
    const f = o.figures;
    return [
      o.scenario,
      o.backend,
      f.lost,
      f.duplicated,
      f.sameKeyRepeats,
      f.stuck,
      f.failed,
      f.http5xx,
      f.leaked,
      f.crashed,
      f.recoverySeconds === null ? '-' : `${f.recoverySeconds}s`,
      f.journal,
      o.seconds,
      o.passed ? 'pass' : 'FAIL',
    ].map(String);
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(['', line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n'));
}

function option(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

function bounded<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)));
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
