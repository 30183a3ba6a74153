import type { Echo } from './echo.js';
import type { Figures } from './figures.js';
import type { Watcher } from './watch.js';

export type RunFigures = Pick<Figures, 'lost' | 'duplicated' | 'sameKeyRepeats' | 'stuck' | 'failed'> & {
  effects: number;
};

/**
 * Waits (until `deadline`) for the accepted runs (trigger number → run id) to end, then counts:
 * lost (a run missing, or a success without one of its effects on the echo server), duplicated
 * (an effect received under two keys, or one trigger number started as two runs), same-key
 * repeats, stuck (not ended), failed.
 */
export async function runFigures(
  watcher: Watcher,
  echo: Echo,
  accepted: Map<number, string>,
  effectsOf: (n: number) => string[],
  deadline: number,
): Promise<RunFigures> {
  const statuses = await watcher.settle(accepted.values(), deadline);
  const f: RunFigures = { lost: 0, duplicated: 0, sameKeyRepeats: 0, stuck: 0, failed: 0, effects: 0 };
  const expected: string[] = [];
  for (const [n, id] of accepted) {
    const status = statuses.get(id) as string | undefined;
    if (status === undefined) f.lost += 1;
    else if (status === 'failed' || status === 'cancelled') f.failed += 1;
    else if (status === 'succeeded' || status === 'success') expected.push(...effectsOf(n));
    else f.stuck += 1;
  }
  const effects = echo.tally(expected);
  const ids = [...accepted.values()];
  f.lost += effects.missing.length;
  f.duplicated = effects.duplicated + ids.length - new Set(ids).size;
  f.sameKeyRepeats = effects.sameKey;
  f.effects = effects.received;
  return f;
}
