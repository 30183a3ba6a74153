import { describe, expect, it } from 'vitest';
import { ApiError } from '../client/client.js';
import { ValidationError } from '../errors.js';
import { asFlagError, flagOf, flowFlags, storedRefuses } from './flow-flags.js';

describe('the flow flags of runledger start', () => {
  it('makes the start options POST /runs takes, each only when given', () => {
    expect(flowFlags({})).toEqual({});
    expect(
      flowFlags({
        priority: '-3',
        throttle: '10/1m',
        throttleKey: 'input.account',
        debounce: '3000',
        debounceKey: 'input.chat',
        debounceMaxWait: '20s',
        debounceMode: 'all',
        budgetTokens: '40000',
        budgetCost: '2.5',
        budgetToolCalls: '20',
        budgetSteps: '50',
        budgetWallTime: '1h',
        budgetOnExceed: 'approve',
      }),
    ).toEqual({
      priority: -3,
      throttle: { key: 'input.account', limit: 10, period: '1m' },
      debounce: { key: 'input.chat', period: 3000, maxWait: '20s', mode: 'all' },
      budget: { tokens: 40000, cost: 2.5, toolCalls: 20, steps: 50, wallTime: '1h', onExceed: 'approve' },
    });
  });

  it('reads --not-before as an ISO time (sent as given) or whole ms, and refuses anything else naming the flag', () => {
    expect(flowFlags({ notBefore: '2030-01-01T09:00:00Z' })).toEqual({ notBefore: '2030-01-01T09:00:00Z' });
    expect(flowFlags({ notBefore: ' 1893456000000 ' })).toEqual({ notBefore: 1893456000000 });
    expect(() => flowFlags({ notBefore: 'tomorrow' })).toThrow(/^--not-before: must be an ISO 8601 time/);
    expect(() => flowFlags({ notBefore: '2030-02-31x' })).toThrow(/^--not-before: /);
    expect(() => flowFlags({ notBefore: '-5' })).toThrow(/^--not-before: /);
    expect(flagOf('not_before')).toBe('--not-before');
    expect(() => storedRefuses(flowFlags({ notBefore: '2030-01-01T09:00:00Z' }))).toThrow(
      /^--not-before: a stored workflow's execution starts now/,
    );
  });

  it('makes a batch of --batch-size and --batch-timeout (and --batch-key), each needing --batch-size', () => {
    expect(flowFlags({ batchSize: '100', batchTimeout: '5s', batchKey: 'input.tenant' })).toEqual({
      batch: { key: 'input.tenant', maxSize: 100, timeout: '5s' },
    });
    expect(flowFlags({ batchSize: '10', batchTimeout: '2000' })).toEqual({ batch: { maxSize: 10, timeout: 2000 } });
    expect(() => flowFlags({ batchSize: '10' })).toThrow(/^--batch-size: needs --batch-timeout/);
    expect(() => flowFlags({ batchTimeout: '5s' })).toThrow(/^--batch-timeout: needs --batch-size/);
    expect(() => flowFlags({ batchSize: 'ten', batchTimeout: '5s' })).toThrow(/^--batch-size: must be a whole number/);
    expect(flagOf('batch.max_size')).toBe('--batch-size');
    expect(flagOf('batch.timeout')).toBe('--batch-timeout');
    expect(flagOf('batch.key')).toBe('--batch-key');
    expect(() => storedRefuses(flowFlags({ batchSize: '2', batchTimeout: '1s' }))).toThrow(
      /^--batch-size: a stored workflow's batch/,
    );
  });

  it("tells a server's problem with a flow field as the flag that gave it", () => {
    expect(flagOf('throttle.period')).toBe('--throttle');
    expect(flagOf('throttle.key')).toBe('--throttle-key');
    expect(flagOf('debounce.period')).toBe('--debounce');
    expect(flagOf('debounce.max_wait')).toBe('--debounce-max-wait');
    expect(flagOf('budget.tool_calls')).toBe('--budget-tool-calls');
    expect(flagOf('budget.wall_time')).toBe('--budget-wall-time');
    expect(flagOf('concurrency[0].limit')).toBe('--concurrency-limit');
    expect(flagOf('workflow')).toBeUndefined();
    const told = asFlagError(
      new ApiError(400, 'validation', 'bad', [{ path: 'budget.tokens', message: 'must be a positive number' }]),
    );
    expect(told).toBeInstanceOf(ValidationError);
    expect((told as Error).message).toBe('--budget-tokens: must be a positive number (budget.tokens)');
    const other = new ApiError(400, 'validation', 'bad', [{ path: 'input', message: 'too big' }]);
    expect(asFlagError(other)).toBe(other);
  });

  it('refuses throttle, debounce and budget flags for a stored workflow: they are in its definition', () => {
    expect(() => storedRefuses({ priority: 5 })).not.toThrow();
    expect(() => storedRefuses(flowFlags({ throttle: '1/1s' }))).toThrow(/^--throttle: a stored workflow's throttle/);
    expect(() => storedRefuses(flowFlags({ budgetSteps: '3' }))).toThrow(/^--budget-…: a stored workflow's budget/);
  });
});
