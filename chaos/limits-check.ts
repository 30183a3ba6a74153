import { RUN_EVENT, TERMINAL_RUN_EVENTS } from '../src/runtime/events.js';
import { flowOf } from '../src/runtime/start/run-flow.js';
import type { StoredEvent } from '../src/storage/store.js';

const TERMINAL = new Set<string>(TERMINAL_RUN_EVENTS);

/** A run's hold of one concurrency slot as its journal shows it: from its first step's start to its end. */
interface Hold {
  run: string;
  limit: number;
  from: number;
  /** The position of its terminal event; Infinity for a run that has not ended. */
  to: number;
}

/**
 * The journal checker's rule "a concurrency limit is never exceeded": for every slot a run's `run.started` names
 * (its `flow.concurrency`), at no moment more runs between their first step's start and their end than the limit.
 * Moments are journal positions: a run let in when another ended has its first step started in a later transaction
 * than that end, so its position is the later one on both backends. A slot whose runs started under different
 * limits (the limit was changed) is held to the largest.
 *
 * @example limitProblems(new Map([['run:a', events]])) // [] when no slot ever held more runs than its limit
 */
export function limitProblems(streams: Map<string, StoredEvent[]>): string[] {
  const problems: string[] = [];
  for (const [slot, seen] of slotsHeld(streams))
    if (seen.over > 0)
      problems.push(
        `concurrency ${slot}: up to ${seen.most} runs at once under a limit of ${seen.limit} ` +
          `(${seen.over} times over), ${seen.example}`,
      );
  return problems;
}

/** What the journal shows of one slot: the most runs in at once, its limit, and how often more than it were in. */
export interface SlotHeld {
  limit: number;
  most: number;
  over: number;
  /** The runs in at the moment most were, when that was over the limit. */
  example: string;
  runs: number;
}

/**
 * Per concurrency slot named by the runs' `run.started`, the most runs that were in at once (from their first step's
 * start to their end) and how many times a run came in over the limit.
 *
 * @example slotsHeld(streams).get('checkout:42') // { limit: 2, most: 2, over: 0, example: '', runs: 75 }
 */
export function slotsHeld(streams: Map<string, StoredEvent[]>): Map<string, SlotHeld> {
  const bySlot = new Map<string, Hold[]>();
  for (const [streamId, list] of streams) {
    if (!streamId.startsWith('run:') || list[0]?.type !== RUN_EVENT.runStarted) continue;
    const limits = flowOf(list[0].data)?.concurrency ?? [];
    if (limits.length === 0) continue;
    const first = list.find((e) => e.type === RUN_EVENT.stepStarted);
    if (!first) continue;
    const end = list.find((e) => TERMINAL.has(e.type));
    for (const { slot, limit } of limits) {
      const hold = { run: streamId.slice('run:'.length), limit, from: first.position, to: end?.position ?? Infinity };
      const holds = bySlot.get(slot);
      if (holds) holds.push(hold);
      else bySlot.set(slot, [hold]);
    }
  }
  const held = new Map<string, SlotHeld>();
  for (const [slot, holds] of bySlot) {
    const limit = Math.max(...holds.map((h) => h.limit));
    const moments = holds.flatMap((h) => [
      { at: h.from, hold: h, enter: true },
      { at: h.to, hold: h, enter: false },
    ]);
    moments.sort((a, b) => a.at - b.at || Number(a.enter) - Number(b.enter));
    const inside = new Set<Hold>();
    let over = 0;
    let most = 0;
    let example = '';
    for (const m of moments) {
      if (!m.enter) {
        inside.delete(m.hold);
        continue;
      }
      inside.add(m.hold);
      if (inside.size > limit) over += 1;
      if (inside.size > most) {
        most = inside.size;
        if (most > limit) example = `at position ${m.at}: ${[...inside].map((h) => h.run).join(', ')}`;
      }
    }
    held.set(slot, { limit, most, over, example, runs: holds.length });
  }
  return held;
}
