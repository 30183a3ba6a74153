import { describe, expect, it } from 'vitest';
import {
  agentEventTransitions,
  agentRunTransitions,
  approvalTransitions,
  canMove,
  isRunEnded,
  sources,
  toolCallTransitions,
} from './ledger-lifecycle.js';

/** Every table's edges written out again (as in docs/lifecycle.md): the table must allow these and no others. */
const DRAWN = {
  run: [
    'null->pending',
    'pending->running',
    'running->waiting',
    'running->sleeping',
    'waiting->running',
    'sleeping->running',
    'running->success',
    'pending->failed',
    'running->failed',
    'waiting->failed',
    'sleeping->failed',
  ],
  toolCall: [
    'null->blocked',
    'null->started',
    'blocked->started',
    'error->started',
    'timeout->started',
    'unknown->started',
    'unknown->error',
    'started->unknown',
    'timeout->unknown',
    'unknown->reconciled',
    'started->ok',
    'started->error',
    'started->timeout',
  ],
  approval: ['null->pending', 'pending->approved', 'pending->rejected', 'pending->expired'],
  event: [
    'null->pending',
    'pending->processing',
    'processing->pending',
    'processing->done',
    'pending->failed',
    'processing->failed',
    'failed->pending',
  ],
};

const tables = [
  ['run', agentRunTransitions, ['pending', 'running', 'waiting', 'sleeping', 'success', 'failed']],
  ['toolCall', toolCallTransitions, ['started', 'ok', 'error', 'timeout', 'blocked', 'unknown', 'reconciled']],
  ['approval', approvalTransitions, ['pending', 'approved', 'rejected', 'expired']],
  ['event', agentEventTransitions, ['pending', 'processing', 'done', 'failed']],
] as const;

describe('agent ledger lifecycles', () => {
  it.each(tables)('%s: allows exactly the drawn edges', (name, table, states) => {
    const drawn = new Set(DRAWN[name]);
    for (const from of [null, ...states]) {
      for (const to of states)
        expect(canMove(table, from, to), `${name}: ${from} -> ${to}`).toBe(drawn.has(`${from}->${to}`));
    }
  });

  it('names the states each state is reached from, as canMove allows them', () => {
    for (const table of [agentRunTransitions, agentEventTransitions]) {
      const states = new Set(
        Object.values(table).flatMap((t) => [t.to, ...t.from.filter((f: string | null) => f !== null)]),
      );
      for (const to of states) {
        expect(sources(table, to).sort()).toEqual([...states].filter((from) => canMove(table, from, to)).sort());
      }
    }
    expect(sources(agentEventTransitions, 'failed').sort()).toEqual(['pending', 'processing']);
  });

  it('ends a run in success or failed, from which nothing moves', () => {
    const states = tables[0][2];
    expect(states.filter(isRunEnded)).toEqual(['success', 'failed']);
    for (const end of ['success', 'failed'])
      for (const to of states) expect(canMove(agentRunTransitions, end, to)).toBe(false);
  });

  it('walks the paths of the walkthrough: a refund blocked, approved, run; another rejected stays blocked', () => {
    const walk = (table: Parameters<typeof canMove>[0], path: Array<string | null>) =>
      path.every((to, i) => i === 0 || canMove(table, path[i - 1]!, to!));
    expect(
      walk(agentRunTransitions, [null, 'pending', 'running', 'waiting', 'running', 'sleeping', 'running', 'success']),
    ).toBe(true);
    expect(walk(toolCallTransitions, [null, 'blocked', 'started', 'ok'])).toBe(true);
    expect(walk(toolCallTransitions, [null, 'started', 'timeout', 'started', 'error'])).toBe(true);
    expect(walk(approvalTransitions, [null, 'pending', 'rejected'])).toBe(true);
    expect(canMove(toolCallTransitions, 'ok', 'started')).toBe(false);
    // an effect tool killed between its call and its record: reconciled, never started again
    expect(walk(toolCallTransitions, [null, 'started', 'unknown', 'reconciled'])).toBe(true);
    expect(canMove(toolCallTransitions, 'reconciled', 'started')).toBe(false);
    expect(walk(agentEventTransitions, [null, 'pending', 'processing', 'pending', 'processing', 'failed'])).toBe(true);
    // redriven: pending again, then a fresh run's attempts
    expect(
      walk(agentEventTransitions, [null, 'pending', 'processing', 'failed', 'pending', 'processing', 'done']),
    ).toBe(true);
    expect(agentEventTransitions.backOff.from).toEqual(['processing']);
  });
});
