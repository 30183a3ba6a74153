import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { executionFlow, stepRateLimit } from './flow.js';
import { parseDefinition } from './schema.js';

const steps = [{ id: 'greet', type: 'log', config: { message: 'hi' } }];
const call = (extra: object) => ({
  name: 'f',
  steps: [{ id: 'call', type: 'http_request', config: { url: 'https://api.example.com' }, ...extra }],
});

function problems(input: unknown): { path: string; message: string }[] {
  try {
    parseDefinition(input);
  } catch (error) {
    if (error instanceof ValidationError) return error.problems;
    throw error;
  }
  return [];
}
const paths = (flow: object) => problems({ name: 'f', steps, ...flow }).map((p) => p.path);

describe('a stored definition’s flow fields, checked at save time', () => {
  it('keeps every field as written', () => {
    const flow = {
      concurrency: [
        { key: 'trigger.user_id', limit: 1, on_limit: 'cancel_in_progress' },
        { limit: 50, fair_by: 'trigger.tenant', scope: 'global' },
      ],
      priority: 10,
      throttle: { key: 'openai', limit: 100, period: '1m' },
      debounce: { key: 'trigger.conversation_id', period: '3s', max_wait: '20s', mode: 'last' },
      budget: { tokens: 40_000, cost: 2.5, tool_calls: 20, steps: 100, wall_time: '1h', on_exceed: 'approve' },
    };
    expect(parseDefinition({ name: 'f', steps, ...flow })).toMatchObject(flow);
  });

  it.each([
    [{ concurrency: [{ limit: 0 }] }, 'concurrency[0].limit'],
    [{ concurrency: [{ limit: 1.5 }] }, 'concurrency[0].limit'],
    [{ concurrency: [{ limit: 1 }, { limit: -3 }] }, 'concurrency[1].limit'],
    [{ concurrency: [] }, 'concurrency'],
    [{ concurrency: [{ key: 'input.user', limit: 1 }] }, 'concurrency[0].key'],
    [{ concurrency: [{ key: 'trigger.', limit: 1 }] }, 'concurrency[0].key'],
    [{ concurrency: [{ key: 'has space', limit: 1 }] }, 'concurrency[0].key'],
    [{ concurrency: [{ key: '{{trigger.x}}', limit: 1 }] }, 'concurrency[0].key'],
    [{ concurrency: [{ limit: 1, fair_by: 'trigger..x' }] }, 'concurrency[0].fair_by'],
    [{ concurrency: [{ limit: 1, on_limit: 'later' }] }, 'concurrency[0].on_limit'],
    [{ concurrency: [{ limit: 1, scope: 'world' }] }, 'concurrency[0].scope'],
    [{ concurrency: [{ limit: 1, limt: 2 }] }, 'concurrency[0]'],
    [{ priority: 101 }, 'priority'],
    [{ priority: 1.5 }, 'priority'],
    [{ priority: 'high' }, 'priority'],
    [{ throttle: { limit: 5, period: '500ms' } }, 'throttle.period'],
    [{ throttle: { limit: 5, period: '31d' } }, 'throttle.period'],
    [{ throttle: { limit: 0, period: '1s' } }, 'throttle.limit'],
    [{ throttle: { limit: 1, period: 'soon' } }, 'throttle.period'],
    [{ debounce: { period: '3s', max_wait: '1s' } }, 'debounce.max_wait'],
    [{ debounce: { period: '0s' } }, 'debounce.period'],
    [{ debounce: { period: '3s', mode: 'all' } }, 'debounce.mode'],
    [{ debounce: { period: '3s', mode: 'first' } }, 'debounce.mode'],
    [{ budget: {} }, 'budget'],
    [{ budget: { tokens: -1 } }, 'budget.tokens'],
    [{ budget: { tool_calls: 0.5 } }, 'budget.tool_calls'],
    [{ budget: { wall_time: '100d' } }, 'budget.wall_time'],
    [{ budget: { tokens: 5, on_exceed: 'ask' } }, 'budget.on_exceed'],
    [{ budget: { toolCalls: 5 } }, 'budget'],
  ])('refuses %j, naming %s', (flow, path) => {
    expect(paths(flow)).toEqual([path]);
  });

  it('says what a key is', () => {
    expect(problems({ name: 'f', steps, concurrency: [{ key: 'input.user', limit: 1 }] })[0]!.message).toBe(
      "a stored workflow's key reads the trigger data: write trigger.<field> (got 'input.user')",
    );
    expect(problems({ name: 'f', steps, throttle: { limit: 1, period: '0.5s' } })[0]!.message).toBe(
      'must be from 1s to 30d (got "0.5s")',
    );
  });

  it('takes a rate limit on an http_request step, alone or a list', () => {
    expect(problems(call({ rate_limit: { name: 'openai-tpm', units: 500, key: 'trigger.account' } }))).toEqual([]);
    expect(problems(call({ rate_limit: [{ name: 'a' }, { name: 'b', units: 2 }] }))).toEqual([]);
  });

  it.each([
    [{ rate_limit: { name: 'a', units: 0 } }, 'steps[0].rate_limit.units'],
    [{ rate_limit: [{ name: 'a' }, { name: 'b', units: -2 }] }, 'steps[0].rate_limit[1].units'],
    [{ rate_limit: { name: 'a', key: 'input.x' } }, 'steps[0].rate_limit.key'],
    [{ rate_limit: { name: '' } }, 'steps[0].rate_limit.name'],
    [{ rate_limit: { name: 'has space' } }, 'steps[0].rate_limit.name'],
    [{ rate_limit: { units: 1 } }, 'steps[0].rate_limit'],
  ])('refuses the step rate limit %j, naming %s', (extra, path) => {
    expect(problems(call(extra)).map((p) => p.path)).toEqual([path]);
  });

  it('has no rate limit on a log step', () => {
    const log = { name: 'f', steps: [{ id: 'l', type: 'log', config: { message: 'x' }, rate_limit: { name: 'a' } }] };
    expect(problems(log).map((p) => p.path)).toEqual(['steps[0]']);
  });
});

describe('an execution’s flow options', () => {
  it('resolves keys from the trigger data, per stored workflow unless global', () => {
    const { options, keys } = executionFlow(
      {
        concurrency: [
          { key: 'trigger.user.id', limit: 1 },
          { limit: 50, fair_by: 'trigger.tenant' },
          { key: 'openai', limit: 5, scope: 'global' },
        ],
        throttle: { limit: 10, period: '1m' },
        debounce: { key: 'trigger.chat', period: '3s', max_wait: '20s' },
        priority: 1,
      },
      'wf_1',
      { user: { id: 42 }, tenant: 't1', chat: 'c9' },
    );
    expect(options).toEqual({
      concurrency: [
        { key: 'input.flow_keys.c0', limit: 1 },
        { key: 'input.flow_keys.c1', limit: 50, fairBy: 'input.trigger_data.tenant' },
        { key: 'input.flow_keys.c2', limit: 5, scope: 'global' },
      ],
      priority: 1,
      throttle: { key: 'input.flow_keys.throttle', limit: 10, period: '1m' },
      debounce: { key: 'input.flow_keys.debounce', period: '3s', maxWait: '20s' },
    });
    expect(keys).toEqual({ c0: 'wf_1:42', c1: 'wf_1', c2: 'openai', throttle: 'wf_1', debounce: 'wf_1:c9' });
  });

  it('takes the request’s priority over the definition’s, and maps the budget', () => {
    const { options } = executionFlow(
      { priority: 1, budget: { tool_calls: 3, wall_time: '1h', on_exceed: 'approve' } },
      'wf_1',
      {},
      -5,
    );
    expect(options).toEqual({ priority: -5, budget: { toolCalls: 3, wallTime: '1h', onExceed: 'approve' } });
  });

  it('refuses trigger data without a key’s field, naming the field', () => {
    const run = () => executionFlow({ concurrency: [{ key: 'trigger.user_id', limit: 1 }] }, 'wf_1', { user: 1 });
    expect(run).toThrow(ValidationError);
    expect(run).toThrow("concurrency[0].key: 'trigger.user_id' is not in the trigger data");
  });

  it('reads a step rate limit’s key from the trigger data', () => {
    expect(stepRateLimit({ name: 'a', units: 2, key: 'trigger.account' })).toEqual({
      name: 'a',
      units: 2,
      key: 'input.trigger_data.account',
    });
    expect(stepRateLimit({ name: 'a', key: 'eu' })).toEqual({ name: 'a', key: 'eu' });
  });
});
