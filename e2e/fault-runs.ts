import type { Engine } from '../src/engine.js';
import { isTerminal, type RunView } from '../src/runtime/read/view.js';

/** How many of the runs `ids` are in each status. */
export async function tally(engine: Engine, ids: string[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const id of ids) {
    const { status } = await engine.run(id);
    counts[status] = (counts[status] ?? 0) + 1;
  }
  return counts;
}

/** Polls until every run of `ids` satisfies `done`; a timeout names the statuses the runs were left in. */
export async function waitForRuns(
  engine: Engine,
  ids: string[],
  done: (view: RunView) => boolean,
  what: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let all = true;
    for (const id of ids) if (!done(await engine.run(id))) all = false;
    if (all) return;
    if (Date.now() > deadline)
      throw new Error(`runs not ${what} within ${timeoutMs} ms: ${JSON.stringify(await tally(engine, ids))}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function allEnded(engine: Engine, ids: string[]): Promise<boolean> {
  for (const id of ids) if (!isTerminal((await engine.run(id)).status)) return false;
  return true;
}
