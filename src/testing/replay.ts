import { isDeepStrictEqual } from 'node:util';
import { createEngine } from '../engine.js';
import { RUN_EVENT_TYPES } from '../runtime/pass/history.js';
import type { Workflow } from '../runtime/workflow.js';
import { createSqlitePath } from './databases.js';
import { RUN_EVENT } from '../runtime/events.js';

class SimulatedCrash extends Error {
  override name = 'SimulatedCrash';
}

export interface CrashReport<O> {
  output: O;
  /** Journal writes of a run without crashes: the boundaries a crash was tried at. */
  boundaries: number;
}

/**
 * Runs `workflow` to completion in process on a temp SQLite file, then once more per journal
 * write of that run, with the engine "dying" just before that write commits (it can write nothing
 * more) and a fresh engine taking over. Every run must finish with the same output; a workflow
 * that is not deterministic, or whose steps depend on running exactly once, fails here.
 *
 * @example
 * const { output, boundaries } = await checkCrashRecovery(onboard, { userId: 'u1' });
 */
export async function checkCrashRecovery<I, O>(
  workflow: Workflow<I, O>,
  input: I,
  options: { workflows?: Workflow[] } = {},
): Promise<CrashReport<O>> {
  const workflows = [workflow, ...(options.workflows ?? [])];
  const reference = await runWithCrash(workflows, workflow, input, null);
  for (let crashAt = 1; crashAt <= reference.writes; crashAt++) {
    const { output } = await runWithCrash(workflows, workflow, input, crashAt);
    if (!isDeepStrictEqual(output, reference.output)) {
      throw new Error(
        `after a crash before write ${crashAt} of ${reference.writes}, the run returned ${JSON.stringify(output)} instead of ${JSON.stringify(reference.output)}`,
      );
    }
  }
  return { output: reference.output as O, boundaries: reference.writes };
}

async function runWithCrash(
  workflows: Workflow[],
  workflow: Workflow,
  input: unknown,
  crashAt: number | null,
): Promise<{ output: unknown; writes: number }> {
  const database = createSqlitePath();
  const options = { database, workflows, leaseMs: 200, pollMs: 20 };
  const first = await createEngine(options);
  let writes = 0;
  let crashed!: () => void;
  const dead = new Promise<void>((resolve) => (crashed = resolve));
  first.journal.project(RUN_EVENT_TYPES, async (event) => {
    // the start itself is not a boundary: a crash there means the run never existed
    if (!event.streamId.startsWith('run:') || (event.streamId === 'run:checked' && event.type === RUN_EVENT.runStarted))
      return;
    writes += 1;
    if (crashAt !== null && writes >= crashAt) {
      crashed();
      throw new SimulatedCrash(`the engine died before write ${crashAt}`);
    }
  });
  const run = await first.start(workflow, input, { id: 'checked' });
  if (crashAt === null) {
    const output = await run.result({ pollMs: 20 });
    await first.close();
    return { output, writes };
  }
  await Promise.race([dead, run.result({ pollMs: 20 }).catch(() => {})]);
  await first.close();
  const second = await createEngine(options);
  try {
    return { output: await second.runtime.handle('checked').result({ pollMs: 20 }), writes };
  } finally {
    await second.close();
  }
}
