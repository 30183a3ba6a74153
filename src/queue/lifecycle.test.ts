import { describe, expect, it } from 'vitest';
import type { TaskState } from '../storage/store.js';
import { canTransition, taskEvent, taskTransitions, type JournaledTransition } from './lifecycle.js';

describe('task lifecycle', () => {
  const states: Array<TaskState | null> = [null, 'ready', 'running', 'completed', 'dead'];
  const allowed = new Set(Object.values(taskTransitions).map((t) => `${t.from}->${t.to}`));

  it('allows exactly the drawn edges', () => {
    expect([...allowed].sort()).toEqual(
      [
        'dead->ready',
        'null->ready',
        'ready->dead',
        'ready->running',
        'running->completed',
        'running->dead',
        'running->ready',
      ].sort(),
    );
    for (const from of states) {
      for (const to of states) {
        if (to === null) continue;
        expect(canTransition(from, to), `${from} -> ${to}`).toBe(allowed.has(`${from}->${to}`));
      }
    }
  });

  it('names one event per journaled transition, in the task stream, carrying the new state; claims and releases write none', () => {
    expect(
      Object.entries(taskTransitions)
        .filter(([, t]) => t.event === null)
        .map(([name]) => name),
    ).toEqual(['claim', 'release']);
    for (const [name, t] of Object.entries(taskTransitions)) {
      if (t.event === null) continue;
      const append = taskEvent(name as JournaledTransition, 'task_1', { attempt: 1 });
      expect(append.streamId).toBe('task:task_1');
      expect(append.events).toEqual([{ type: t.event, data: { attempt: 1, state: t.to } }]);
    }
  });
});
