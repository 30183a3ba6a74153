import { describe, expect, it } from 'vitest';
import { checkFlow, checkKey, resolveKey } from './flow-check.js';

describe('flow options', () => {
  it('keeps good options as given', () => {
    const flow = {
      concurrency: [{ key: 'input.user_id', limit: 1, onLimit: 'cancel_in_progress' as const }, { limit: 50 }],
      priority: 10,
      throttle: { key: 'openai', limit: 100, period: '1m' },
      debounce: { key: 'input.chat', period: '5s', maxWait: '1m', mode: 'all' as const },
      budget: { tokens: 40_000, onExceed: 'approve' as const },
    };
    expect(checkFlow(flow)).toEqual(flow);
  });

  it.each([
    [{ concurrency: [{ limit: 0 }] }, 'concurrency[0].limit'],
    [{ concurrency: [{ limit: 1, key: 'input.' }] }, 'concurrency[0].key'],
    [{ concurrency: [{ limit: 1, onLimit: 'drop' }] }, 'concurrency[0].onLimit'],
    [{ concurrency: [] }, 'concurrency'],
    [{ priority: 101 }, 'priority'],
    [{ throttle: { limit: 5, period: '500ms' } }, 'throttle.period'],
    [{ throttle: { limit: 5, period: '31d' } }, 'throttle.period'],
    [{ debounce: { period: '10s', maxWait: '5s' } }, 'debounce.maxWait'],
    [{ budget: { tokens: -1 } }, 'budget.tokens'],
    [{ budget: {} }, 'budget'],
  ])('refuses %j naming %s', (flow, field) => {
    expect(() => checkFlow(flow as never, 'flow')).toThrow(expect.objectContaining({ path: `flow.${field}` }));
  });

  it('reads a key from the input, refusing a run that lacks it', () => {
    expect(resolveKey('input.user.id', { user: { id: 42 } }, 'k')).toBe('42');
    expect(resolveKey('openai', {}, 'k')).toBe('openai');
    expect(() => resolveKey('input.user_id', { other: 1 }, 'concurrency[0].key')).toThrow(
      /concurrency\[0\]\.key.*not in the run's input/,
    );
    expect(() => checkKey('has space', 'k')).toThrow(/constant key/);
  });
});
