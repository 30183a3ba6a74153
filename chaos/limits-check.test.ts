import { describe, expect, it } from 'vitest';
import { RUN_EVENT } from '../src/runtime/events.js';
import type { StoredEvent } from '../src/storage/store.js';
import { limitProblems, slotsHeld } from './limits-check.js';

/** A run's journal at the given positions: started (holding `slots`), its first step, its end (none: still running). */
function run(id: string, slots: Record<string, number>, step: number, end?: number): [string, StoredEvent[]] {
  const event = (position: number, type: string, data: unknown, version: number): StoredEvent => ({
    position,
    streamId: `run:${id}`,
    version,
    type,
    data,
    metadata: {},
    timestamp: 0,
  });
  const concurrency = Object.entries(slots).map(([slot, limit]) => ({ key: 'input.k', limit, slot }));
  const list = [
    event(step - 1, RUN_EVENT.runStarted, { flow: { concurrency } }, 1),
    event(step, RUN_EVENT.stepStarted, { seq: 1, attempt: 1 }, 2),
    event(step + 1, RUN_EVENT.stepStarted, { seq: 1, attempt: 2 }, 3),
  ];
  if (end !== undefined) list.push(event(end, RUN_EVENT.runCompleted, {}, 4));
  return [`run:${id}`, list];
}

describe('the rule "a concurrency limit is never exceeded"', () => {
  it('lets runs of a key take turns up to its limit, a run let in as another ends, other keys apart', () => {
    const streams = new Map([
      run('a', { 'wf:x': 2 }, 10, 50),
      run('b', { 'wf:x': 2 }, 20, 60),
      run('c', { 'wf:x': 2 }, 51, 90), // let in by a's end
      run('d', { 'wf:x': 2 }, 61), // by b's, not ended yet
      run('e', { 'wf:y': 1 }, 15, 95),
      run('f', { 'wf:y': 1, global: 5 }, 96),
      run('g', {}, 30, 40), // no limits
    ]);
    expect(limitProblems(streams)).toEqual([]);
    expect(Object.fromEntries(slotsHeld(streams))).toEqual({
      'wf:x': { limit: 2, most: 2, over: 0, example: '', runs: 4 },
      'wf:y': { limit: 1, most: 1, over: 0, example: '', runs: 2 },
      global: { limit: 5, most: 1, over: 0, example: '', runs: 1 },
    });
  });

  it('names the slot, how many were in at once and which runs, counting from the first step to the end', () => {
    const streams = new Map([
      run('a', { 'wf:x': 2 }, 10, 50),
      run('b', { 'wf:x': 2 }, 20, 60),
      run('c', { 'wf:x': 2 }, 40), // a third while a and b hold the slots
      run('d', { 'wf:y': 1 }, 100, 120),
      run('e', { 'wf:y': 1 }, 110, 130),
    ]);
    expect(limitProblems(streams)).toEqual([
      'concurrency wf:x: up to 3 runs at once under a limit of 2 (1 times over), at position 40: a, b, c',
      'concurrency wf:y: up to 2 runs at once under a limit of 1 (1 times over), at position 110: d, e',
    ]);
  });
});
