import { CancelledError, TerminalError } from '../../errors.js';
import type { WorkflowContext } from '../../runtime/workflow.js';
import type { MapStep } from '../schema.js';
import { MAX_ITEMS } from './configs.js';
import { itemOutputs, itemTemplates, plainItems } from './item.js';
import { finish, runSteps, tryRender, type StoredRun } from './run.js';

/** How one item ended: its last step's output, or the error it failed with (at which of its steps). */
export type ItemResult = { status: 'success'; output: unknown } | { status: 'failed'; step: string; error: string };

/**
 * Runs the map's steps once per item of `items`, each item a branch of `ctx.parallel` (`i0`, `i1` …: each numbers
 * its own calls, so a replay finds every item's calls whatever order they ran in), at most `concurrency` items at
 * once. The output is every item's result, in the items' order. More failed items than tolerated: the step fails.
 * Some failed, within the tolerance: the step succeeds and the execution ends `partial_success` (`run.partial`).
 */
export async function runMap(run: StoredRun, ctx: WorkflowContext, step: MapStep): Promise<ItemResult[]> {
  const { rendered, problem } = tryRender({ items: step.config.items }, run);
  const items = (rendered as { items?: unknown } | undefined)?.items;
  const bad =
    problem ??
    (!Array.isArray(items)
      ? new TerminalError(`config.items must be a list (got ${items === null ? 'null' : typeof items})`)
      : items.length > MAX_ITEMS
        ? new TerminalError(`config.items has ${items.length} items: a map runs at most ${MAX_ITEMS}`)
        : null);
  if (bad !== null) return (await finish(run, ctx, step, () => Promise.reject(bad))) as never;
  const list = items as unknown[];
  const steps = itemTemplates(step.config.steps);
  const limit = permits(step.config.concurrency);
  const failedAt: string[] = [];
  const branches = Object.fromEntries(
    list.map((item, index) => [
      `i${index}`,
      async (branchCtx: WorkflowContext) => {
        await limit.take();
        try {
          const own: StoredRun = { ...run, item: index, outputs: { ...run.outputs, ...itemOutputs(item, index) } };
          for (const inner of steps) {
            failedAt[index] = inner.id;
            await runSteps(own, branchCtx, [inner], true);
          }
          return own.outputs[steps.at(-1)!.id]?.output ?? null;
        } finally {
          limit.give();
        }
      },
    ]),
  );
  const outcomes = Object.values(await ctx.parallel(step.id, branches));
  const cancelled = outcomes.find((o) => o.status === 'failed' && o.error instanceof CancelledError);
  if (cancelled?.status === 'failed') throw cancelled.error;
  const results = outcomes.map(
    (o, i): ItemResult =>
      o.status === 'success'
        ? { status: 'success', output: o.output }
        : { status: 'failed', step: failedAt[i]!, error: plainItems(`${o.error.name}: ${o.error.message}`) },
  );
  const recorded = (await finish(run, ctx, step, async () => {
    const failed = results.filter((r) => r.status === 'failed');
    const tolerated = tolerance(step, results.length);
    if (failed.length > tolerated) {
      const first = results.findIndex((r) => r.status === 'failed');
      throw new TerminalError(
        `${failed.length} of ${results.length} items failed (${tolerated} tolerated); item ${first}: ${(failed[0] as { error: string }).error}`,
      );
    }
    return results;
  })) as ItemResult[];
  if (isPartialMap(recorded)) run.partial ??= step.id;
  return recorded;
}

/** Whether a map's output has a failed item (within its tolerance, or it would have failed). */
export function isPartialMap(output: unknown): boolean {
  return Array.isArray(output) && output.some((r) => (r as ItemResult | null)?.status === 'failed');
}

/** How many items may fail: `tolerated_failures`, or `tolerated_failure_percent` of the items (rounded down); else none. */
export function tolerance(step: MapStep, count: number): number {
  const { tolerated_failures: failures, tolerated_failure_percent: percent } = step.config;
  if (failures !== undefined) return failures;
  if (percent !== undefined) return Math.floor((count * percent) / 100);
  return 0;
}

/** At most `n` holders at once; the others wait their turn in the order they asked. */
function permits(n: number): { take(): Promise<void>; give(): void } {
  let free = n;
  const waiting: (() => void)[] = [];
  return {
    take: () => {
      if (free > 0) {
        free -= 1;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => waiting.push(resolve));
    },
    give: () => {
      const next = waiting.shift();
      if (next) next();
      else free += 1;
    },
  };
}
