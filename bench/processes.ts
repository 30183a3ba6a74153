import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createEngine } from '../dist/engine.js';
import { withDatabase, type Backend } from './databases.js';
import { perSecond } from './journal.js';
import { TEN } from './processes-child.js';

const CHILD = fileURLToPath(new URL('./processes-child.ts', import.meta.url));
const TIMEOUT_MS = 300_000;

/**
 * How the 10-step workflow scales with worker processes on one database (issue 48's `wf10_<n>proc_per_s`): for each
 * count, a fresh database, `n` worker processes (each its run worker at concurrency 10) and this process starting
 * `runs` runs, 100 at a time, as a client would; runs per second from the first start to the last completion. On a
 * 2-core machine the database shares the cores with the workers: past 2 processes the figure says what they
 * contend on, not what more cores would give.
 */
export async function benchProcesses(
  backend: Backend,
  runs: number,
  counts: readonly number[],
  log: (line: string) => void = () => {},
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const n of counts) {
    out[`wf10_${n}proc_per_s`] = Math.round(await withDatabase(backend, (database) => measure(database, runs, n)));
    log(`wf10_${n}proc_per_s: ${out[`wf10_${n}proc_per_s`]}`);
  }
  return out;
}

async function measure(database: string, runs: number, processes: number): Promise<number> {
  // migrates the database before the workers open it; starts runs, works none
  const engine = await createEngine({ database, workers: false, workflows: [TEN] });
  const children = Array.from({ length: processes }, () =>
    spawn(process.execPath, ['--import', 'tsx', CHILD, database], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  const exited = children.map((c) => new Promise<void>((resolve) => c.once('exit', () => resolve())));
  try {
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve, reject) => {
            c.once('message', () => resolve());
            c.once('exit', (code) => reject(new Error(`a worker exited before it was ready (code ${code})`)));
          }),
      ),
    );
    let done = 0;
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const counting = await engine.subscribe(
      `bench.procs.${processes}`,
      { types: ['run.completed', 'run.failed'], from: 'end' },
      async () => {
        if (++done === runs) finish();
      },
    );
    const started = performance.now();
    for (let i = 0; i < runs; i += 100)
      await Promise.all(Array.from({ length: Math.min(100, runs - i) }, () => engine.start(TEN, null)));
    const timeout = new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${done} of ${runs} runs ended after ${TIMEOUT_MS} ms`)), TIMEOUT_MS).unref(),
    );
    await Promise.race([finished, timeout]);
    const rate = perSecond(runs, started);
    await counting.stop();
    return rate;
  } finally {
    for (const c of children) if (c.connected) c.send('stop');
    await Promise.all(exited);
    await engine.close();
  }
}

// `npx tsx bench/processes.ts [sqlite|postgres] [runs]` (after `tsc -p tsconfig.build.json`): this bench alone
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const backend = (process.argv[2] ?? 'postgres') as Backend;
  const runs = Number(process.argv[3] ?? 2000);
  const result = await benchProcesses(backend, runs, [1, 2, 4], (line) => console.error(`  ${backend} ${line}`));
  console.log(JSON.stringify({ backend, ...result }));
}
