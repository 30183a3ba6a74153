import type { Engine } from '../engine.js';
import { NotFoundError } from '../errors.js';
import { runStream } from '../runtime/pass/history.js';
import { replayHistory, type RecordedHistory, type ReplayResult } from '../runtime/replay.js';
import type { Workflow } from '../runtime/workflow.js';

export type { RecordedEvent, RecordedHistory, ReplayResult } from '../runtime/replay.js';

/**
 * Replays each recorded history through `workflows` (new code), in memory and writing nothing: recorded results
 * stand in for every step, sleep and wait. Each result says whether the run replays, or where the code first
 * departs from its history, in plain words. A run still in flight replays up to where its history ends.
 *
 * @example
 * const results = await replayHistories([await recordedHistory(engine, 'order-1')], [order]);
 * expect(results.filter((r) => !r.replays)).toEqual([]);
 */
export async function replayHistories(histories: RecordedHistory[], workflows: Workflow[]): Promise<ReplayResult[]> {
  const results: ReplayResult[] = [];
  for (const history of histories) results.push(await replayHistory(history, workflows));
  return results;
}

/**
 * Run `runId`'s history as `engine`'s journal holds it, its big values whole: what `replayHistories` takes.
 *
 * @example const history = await recordedHistory(engine, 'order-1');
 */
export async function recordedHistory(engine: Engine, runId: string): Promise<RecordedHistory> {
  const stored = await engine.journal.readStream(runStream(runId), { limit: 1_000_000 });
  if (stored.length === 0) throw new NotFoundError(`run ${runId} not found`);
  return { runId, events: await engine.runtime.blobs.resolveEvents(stored) };
}
