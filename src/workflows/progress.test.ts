import { describe, expect, it } from 'vitest';
import { etaSeconds, median } from './progress.js';
import type { StepRecord } from './record.js';
import type { LeafStep, StepDefinition } from './schema.js';

const step = (id: string): LeafStep => ({ id, type: 'log', config: { message: 'x', level: 'info' } });
const rec = (step_id: string, status: StepRecord['status'], started_at: string | null = null): StepRecord => ({
  step_id,
  type: 'log',
  status,
  attempts: 0,
  started_at,
  finished_at: null,
  duration_ms: null,
  input: null,
  output: null,
  error: null,
});

describe('ETA', () => {
  it('medians of odd and even counts', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('adds the medians of the steps not ended, less what a running one has run; null without history for one', () => {
    const definition = [step('a'), step('b'), step('c')];
    const stats = { a: [1000, 3000, 2000], b: [4000], c: [500, 1500] };
    expect(etaSeconds(definition, [rec('a', 'success'), rec('b', 'pending'), rec('c', 'pending')], stats)).toBe(5);
    const started = new Date(Date.now() - 1000).toISOString();
    const eta = etaSeconds(
      definition,
      [rec('a', 'success'), rec('b', 'running', started), rec('c', 'pending')],
      stats,
    )!;
    expect(eta).toBeGreaterThan(3.8);
    expect(eta).toBeLessThanOrEqual(4);
    expect(
      etaSeconds(definition, [rec('a', 'pending'), rec('b', 'pending'), rec('c', 'pending')], { a: [1000], b: [1000] }),
    ).toBeNull();
    expect(etaSeconds(definition, [], undefined)).toBeNull();
  });

  it('counts parallel branches as the longest one', () => {
    const parallel: StepDefinition = {
      id: 'render',
      type: 'parallel',
      config: { branches: { word: [step('w1'), step('w2')], ppt: [step('p1')] } },
    };
    const stats = { w1: [1000], w2: [1000], p1: [5000], after: [1000] };
    const records = [
      rec('render', 'pending'),
      rec('w1', 'success'),
      rec('w2', 'pending'),
      rec('p1', 'pending'),
      rec('after', 'pending'),
    ];
    expect(etaSeconds([parallel, step('after')], records, stats)).toBe(6);
  });
});
