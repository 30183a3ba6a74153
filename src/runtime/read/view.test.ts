import { describe, expect, it } from 'vitest';
import { currentStatus, runView, type RunView } from './view.js';

describe('the status vocabulary', () => {
  it("reads the spellings of earlier versions in today's words, and leaves today's alone", () => {
    expect(['succeeded', 'ok', 'error', 'INITIATED', 'BUSY', 'COMPLETED', 'FAILED'].map(currentStatus)).toEqual([
      'success',
      'success',
      'failed',
      'pending',
      'running',
      'success',
      'failed',
    ]);
    expect(
      ['pending', 'running', 'sleeping', 'waiting', 'success', 'failed', 'cancelled', 'retrying'].map(currentStatus),
    ).toEqual(['pending', 'running', 'sleeping', 'waiting', 'success', 'failed', 'cancelled', 'retrying']);
    expect(currentStatus('nonsense')).toBe('nonsense');
  });

  it("reads a view stored by an earlier version (run succeeded, steps ok / error) in today's words", () => {
    const stored = {
      id: 'r1',
      workflow: 'w',
      status: 'succeeded',
      input: null,
      output: 1,
      error: null,
      compensations: null,
      createdAt: 1,
      updatedAt: 2,
      steps: [
        { seq: 1, name: 'a', status: 'ok' },
        { seq: 2, name: 'b', status: 'error' },
        { seq: 3, name: 'c', status: 'retrying' },
      ],
    } as unknown as RunView;
    const view = runView(stored)!;
    expect(view.status).toBe('success');
    expect(view.steps.map((s) => s.status)).toEqual(['success', 'failed', 'retrying']);
    expect(runView(undefined)).toBeUndefined();
  });
});
