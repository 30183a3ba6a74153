import { describe, expect, it } from 'vitest';
import { allowedAfter, isEnded, SESSION_EVENT_TYPES, statusAfter, type SessionEventType } from './lifecycle.js';

/** The edges of the session lifecycle, written out again: the table must allow these and no others. */
const EDGES: Array<[SessionEventType | null, SessionEventType]> = [
  [null, 'SESSION_INITIATED'],
  ['SESSION_INITIATED', 'AGENT_INVOCATION_STARTED'],
  ['AGENT_INVOCATION_STARTED', 'AGENT_INVOCATION_SUCCEEDED'],
  ['AGENT_INVOCATION_STARTED', 'AGENT_INVOCATION_FAILED'],
  ['AGENT_INVOCATION_SUCCEEDED', 'AGENT_ENTRYPOINT_STARTED'],
  ['AGENT_ENTRYPOINT_STARTED', 'AGENT_BACKGROUND_TASK_STARTED'],
  ['AGENT_ENTRYPOINT_STARTED', 'AGENT_ENTRYPOINT_FAILED'],
  ['AGENT_ENTRYPOINT_STARTED', 'SESSION_TIMED_OUT'],
  ['AGENT_BACKGROUND_TASK_STARTED', 'AGENT_BACKGROUND_TASK_COMPLETED'],
  ['AGENT_BACKGROUND_TASK_STARTED', 'AGENT_BACKGROUND_TASK_FAILED'],
  ['AGENT_BACKGROUND_TASK_STARTED', 'SESSION_TIMED_OUT'],
  ['SESSION_INITIATED', 'SESSION_FAILED'],
  ['AGENT_INVOCATION_STARTED', 'SESSION_FAILED'],
  ['AGENT_INVOCATION_SUCCEEDED', 'SESSION_FAILED'],
  ['AGENT_ENTRYPOINT_STARTED', 'SESSION_FAILED'],
  ['AGENT_BACKGROUND_TASK_STARTED', 'SESSION_FAILED'],
];

const walk = (types: SessionEventType[]) => types.every((type, i) => allowedAfter(types[i - 1] ?? null, type));

describe('session lifecycle', () => {
  it('allows exactly the drawn edges', () => {
    for (const last of [null, ...SESSION_EVENT_TYPES]) {
      for (const type of SESSION_EVENT_TYPES) {
        const drawn = EDGES.some(([from, to]) => from === last && to === type);
        expect(allowedAfter(last, type), `${last} → ${type}`).toBe(drawn);
      }
    }
  });

  it('ends a session with exactly one ending event, after which nothing is allowed', () => {
    const ending = SESSION_EVENT_TYPES.filter((type) => isEnded(statusAfter(type)));
    expect(ending.sort()).toEqual(
      [
        'AGENT_BACKGROUND_TASK_COMPLETED',
        'AGENT_BACKGROUND_TASK_FAILED',
        'AGENT_ENTRYPOINT_FAILED',
        'AGENT_INVOCATION_FAILED',
        'SESSION_FAILED',
        'SESSION_TIMED_OUT',
      ].sort(),
    );
    for (const end of ending)
      for (const type of SESSION_EVENT_TYPES) expect(allowedAfter(end, type), `${end} → ${type}`).toBe(false);
  });

  it('walks the paths of the brief, with their statuses', () => {
    const happy: SessionEventType[] = [
      'SESSION_INITIATED',
      'AGENT_INVOCATION_STARTED',
      'AGENT_INVOCATION_SUCCEEDED',
      'AGENT_ENTRYPOINT_STARTED',
      'AGENT_BACKGROUND_TASK_STARTED',
      'AGENT_BACKGROUND_TASK_COMPLETED',
    ];
    expect(walk(happy)).toBe(true);
    expect(happy.map(statusAfter)).toEqual(['pending', 'running', 'running', 'running', 'running', 'success']);
    expect(walk(['SESSION_INITIATED', 'AGENT_INVOCATION_STARTED', 'AGENT_INVOCATION_FAILED'])).toBe(true);
    expect(walk([...happy.slice(0, 4), 'AGENT_ENTRYPOINT_FAILED'])).toBe(true);
    expect(walk([...happy.slice(0, 5), 'SESSION_TIMED_OUT'])).toBe(true);
    expect(statusAfter('SESSION_TIMED_OUT')).toBe('failed');
    expect(walk(['SESSION_INITIATED', 'AGENT_INVOCATION_SUCCEEDED'])).toBe(false);
    expect(walk([...happy.slice(0, 3), 'AGENT_BACKGROUND_TASK_STARTED'])).toBe(false);
  });
});
