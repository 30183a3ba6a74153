/**
 * A worker process for the crash tests: `node --import tsx e2e/crash-child.ts <mode> <database> [crash point] [after]`.
 * With a crash point armed it SIGKILLs itself there; without one it runs to the end and exits 0.
 *   append: appends batches of 10 events to stream `batch` (a projection counts them), 20 batches.
 *   drain:  works queue `jobs` (concurrency 10, lease 1 s) until no task is ready or running.
 */
import { armCrashPoint, type CrashPointName } from '../src/crash.js';
import { createEngine } from '../src/engine.js';

const [mode, database, point, after] = process.argv.slice(2);
const engine = await createEngine({ database: database!, pollMs: 50 });
if (point) armCrashPoint(point as CrashPointName, Number(after ?? 0));

if (mode === 'append') {
  engine.journal.project('counted', async (_event, tx) => {
    const n = ((await tx.projectionGet({ name: 'count', key: 'batch' })) as number | undefined) ?? 0;
    await tx.projectionPut({ name: 'count', key: 'batch', value: n + 1 });
  });
  for (let i = 0; i < 20; i++) {
    await engine.journal.append(
      'batch',
      Array.from({ length: 10 }, (_, j) => ({ type: 'counted', data: { batch: i, j } })),
    );
  }
} else if (mode === 'drain') {
  // a millisecond of work per task spreads completions over many commits, so the crash lands mid-drain
  const work = async (payload: { n: number }) => {
    await new Promise((resolve) => setTimeout(resolve, 1));
    return { double: payload.n * 2 };
  };
  engine.work('jobs', work, { concurrency: 10, leaseMs: 1000, pollMs: 50 });
  for (;;) {
    const { tasks } = await engine.store.status();
    if (tasks.ready === 0 && tasks.running === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
await engine.close();
