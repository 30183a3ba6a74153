import { createEngine } from '../dist/engine.js';
import { workflow } from '../dist/runtime/workflow.js';

/** Steps of the run `long_run_first_steps_ms` and `long_run_last_steps_ms` measures, and the steps each end's average is taken over. */
export const LONG_STEPS = { steps: 1_000, window: 200 };

const marks: number[] = [];
const long = workflow('bench-long-steps', async (ctx, input: { n: number; window: number }) => {
  for (let i = 0; i < input.n; i++) {
    if (i % input.window === 0) marks.push(performance.now());
    await ctx.step(`s${i}`, async () => 'x'.repeat(200));
  }
  marks.push(performance.now());
  return input.n;
});

/**
 * `long_run_first_steps_ms` / `long_run_last_steps_ms`: the time per step of one run of `steps` steps (each returning
 * 200 bytes), over its first and its last `window` steps. Equal means a step costs the same in a
 * long run as in a short one (the run's view keeps at most 50 ended steps, docs/longrun.md).
 */
export async function benchLongSteps(
  database: string,
  sizes = LONG_STEPS,
): Promise<{ long_run_first_steps_ms: number; long_run_last_steps_ms: number }> {
  const engine = await createEngine({ database, workflows: [long] });
  try {
    marks.length = 0;
    await (await engine.start(long, { n: sizes.steps, window: sizes.window })).result();
    const per = (from: number, to: number) => (to - from) / sizes.window;
    return {
      long_run_first_steps_ms: per(marks[0]!, marks[1]!),
      long_run_last_steps_ms: per(marks.at(-2)!, marks.at(-1)!),
    };
  } finally {
    await engine.close();
  }
}
