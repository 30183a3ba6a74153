import { describe, expect, it } from 'vitest';
import { executionFlow, flowProblems } from '../../workflows/flow.js';
import { checkFlow } from '../flow-check.js';
import { joined } from '../pass/history.js';

describe('batch options', () => {
  it('checks maxSize, timeout, key and into, naming the field and the limit', () => {
    expect(checkFlow({ batch: { key: 'input.tenant', maxSize: 100, timeout: '5s' } })).toEqual({
      batch: { key: 'input.tenant', maxSize: 100, timeout: '5s' },
    });
    expect(checkFlow({ batch: { maxSize: 10_000, timeout: '1d' } }).batch?.maxSize).toBe(10_000);
    const bad = (batch: unknown) => () => checkFlow({ batch: batch as never });
    expect(bad({ maxSize: 0, timeout: '1s' })).toThrow('batch.maxSize: must be a whole number from 1 to 10000 (got 0)');
    expect(bad({ maxSize: 10_001, timeout: '1s' })).toThrow(/^batch\.maxSize/);
    expect(bad({ maxSize: '5', timeout: '1s' })).toThrow(/^batch\.maxSize/);
    expect(bad({ maxSize: 5, timeout: '999ms' })).toThrow(/^batch\.timeout: must be from 1s/);
    expect(bad({ maxSize: 5, timeout: '25h' })).toThrow('batch.timeout: must be from 1s to 1d (got "25h")');
    expect(bad({ maxSize: 5, timeout: '1s', key: 'input.a b' })).toThrow(/^batch\.key/);
    expect(bad({ maxSize: 5, timeout: '1s', into: 'a.b' })).toThrow(/^batch\.into/);
    expect(bad([])).toThrow(/^batch: must be an object/);
    expect(() => checkFlow({ batch: { maxSize: 2, timeout: '1s' }, debounce: { period: '1s' } })).toThrow(
      /^batch: cannot be combined with debounce/,
    );
    expect(() =>
      checkFlow({ batch: { maxSize: 2, timeout: '1s' }, throttle: { limit: 1, period: '1s' } }, 'flow'),
    ).toThrow(/^flow\.batch: cannot be combined with throttle/);
  });

  it("appends a batch's later input to the run's list, or to the field it names", () => {
    expect(joined([{ n: 1 }], { input: { n: 2 } })).toEqual([{ n: 1 }, { n: 2 }]);
    expect(joined({ id: 'x', trigger_data: [{ n: 1 }] }, { input: { n: 2 }, into: 'trigger_data' })).toEqual({
      id: 'x',
      trigger_data: [{ n: 1 }, { n: 2 }],
    });
  });

  it("checks a stored definition's batch with snake_case paths, and starts its executions collecting trigger_data", () => {
    expect(flowProblems({ batch: { max_size: 0, timeout: '1s' } })).toEqual([
      { path: 'batch.max_size', message: 'must be a whole number from 1 to 10000 (got 0)' },
    ]);
    expect(flowProblems({ batch: { key: 'input.user', max_size: 2, timeout: '1s' } })[0]?.path).toBe('batch.key');
    expect(flowProblems({ batch: { key: 'trigger.user', max_size: 2, timeout: '1s' } })).toEqual([]);
    const { options, keys } = executionFlow({ batch: { key: 'trigger.user', max_size: 2, timeout: '1m' } }, 'wf_1', {
      user: 'ada',
    });
    expect(options.batch).toEqual({ key: 'input.flow_keys.batch', maxSize: 2, timeout: '1m', into: 'trigger_data' });
    expect(keys).toEqual({ batch: 'wf_1:ada' });
  });
});
