import { describe, expect, it } from 'vitest';
import { checkUsage, extendBudget, passedBudget } from './budget.js';

const none = { tokens: 0, cost: 0, toolCalls: 0, steps: 0 };

describe('budget', () => {
  it('names the first cap passed and its figures, in words a person reads', () => {
    expect(passedBudget({ tokens: 40_000 }, { ...none, tokens: 41_200 }, 0)).toEqual({
      budget: 'tokens',
      used: 41_200,
      limit: 40_000,
      reason: 'budget: 41,200 of 40,000 tokens',
    });
    expect(passedBudget({ cost: 0.5 }, { ...none, cost: 0.5234 }, 0)?.reason).toBe('budget: 0.5234 of 0.5 cost');
    expect(passedBudget({ toolCalls: 10 }, { ...none, toolCalls: 11 }, 0)?.reason).toBe('budget: 11 of 10 tool calls');
    expect(passedBudget({ wallTime: '1m' }, none, 60_001)?.reason).toBe('budget: 60,001 of 60,000 ms wall time');
  });

  it('lets a run reach its caps exactly', () => {
    const budget = { tokens: 100, cost: 1, toolCalls: 2, steps: 3, wallTime: 1000 };
    expect(passedBudget(budget, { tokens: 100, cost: 1, toolCalls: 2, steps: 3 }, 1000)).toBeNull();
    expect(passedBudget({ steps: 3 }, { ...none, steps: 4 }, 0)?.reason).toBe('budget: 4 of 3 steps');
  });

  it('extends by the extension, or by the starting budget again', () => {
    const base = { tokens: 100, wallTime: '1m', onExceed: 'approve' as const };
    expect(extendBudget(base, base, undefined)).toEqual({ tokens: 200, wallTime: 120_000, onExceed: 'approve' });
    expect(extendBudget({ tokens: 200 }, base, { tokens: 5, steps: 2 })).toEqual({ tokens: 205, steps: 2 });
  });

  it('refuses a bad usage report, naming the field', () => {
    expect(checkUsage({ tokens: 5 })).toEqual({ tokens: 5, cost: 0, toolCalls: 0 });
    expect(() => checkUsage({ tokens: -1 })).toThrow('usage.tokens: must be a number from 0 to 1e15 (got -1)');
    expect(() => checkUsage({ toolCalls: 1.5 })).toThrow('usage.toolCalls: must be a whole number (got 1.5)');
    expect(() => checkUsage({ cost: Number.NaN })).toThrow('usage.cost');
    expect(() => checkUsage({ tokenz: 1 } as never)).toThrow('usage.tokenz: is not one of tokens, cost, toolCalls');
    expect(() => checkUsage(null as never)).toThrow('usage: must be an object');
  });
});
