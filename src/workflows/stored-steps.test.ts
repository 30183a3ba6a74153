import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { parseDefinition } from './schema.js';
import { matchValue, parseMatch } from './steps/configs.js';

function problems(...steps: unknown[]): { path: string; message: string }[] {
  try {
    parseDefinition({ name: 'w', steps });
  } catch (error) {
    if (error instanceof ValidationError) return error.problems;
    throw error;
  }
  return [];
}

const map = (config: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id: 'each',
  type: 'map',
  config: {
    items: '{{trigger.documents}}',
    steps: [{ id: 'show', type: 'log', config: { message: '{{item}}' } }],
    ...config,
  },
  ...extra,
});

describe('sleep, wait_for_event, map and workflow steps checked at save time', () => {
  it.each([
    [{ id: 's', type: 'sleep', config: { duration: 'soon' } }, 'steps[0].config.duration', /like '200ms', '10s'/],
    [{ id: 's', type: 'sleep', config: { duration: -5 } }, 'steps[0].config.duration', /must be ≥ 0 ms/],
    [{ id: 's', type: 'sleep', config: { until: 'tomorrow' } }, 'steps[0].config.until', /ISO 8601 time/],
    [{ id: 's', type: 'sleep', config: {} }, 'steps[0].config', /either `duration`/],
    [{ id: 's', type: 'sleep', config: { duration: '1s', until: '{{trigger.at}}' } }, 'steps[0].config', /not both/],
    [
      { id: 'w', type: 'wait_for_event', config: { event: 'payment.received', match: 'order_id = 42' } },
      'steps[0].config.match',
      /must read 'data.<field> == <value>'/,
    ],
    [
      {
        id: 'w',
        type: 'wait_for_event',
        config: { event: 'payment.received', match: 'data.id == {{trigger.id | shout}}' },
      },
      'steps[0].config.match',
      /unknown filter 'shout'/,
    ],
    [
      { id: 'w', type: 'wait_for_event', config: { event: 'paid', timeout: 'forever' } },
      'steps[0].config.timeout',
      /like/,
    ],
    [{ id: 'w', type: 'wait_for_event', config: { event: 'a b' } }, 'steps[0].config.event', /an event type/],
    [
      { id: 'w', type: 'wait_for_event', config: { event: 'paid', lookback: '5m' } },
      'steps[0].config.lookback',
      /with a match/,
    ],
    [
      { id: 'w', type: 'wait_for_event', config: { event: 'paid', match: 'data.id == 1', lookback: '2d' } },
      'steps[0].config.lookback',
      /at most 24h/,
    ],
    [{ id: 'c', type: 'workflow', config: { input: {} } }, 'steps[0].config.workflow', /required/],
    [map({ items: 'a, b' }), 'steps[0].config.items', /a list or a template/],
    [map({ concurrency: 0 }), 'steps[0].config.concurrency', /at least 1/],
    [
      map({ tolerated_failures: 1, tolerated_failure_percent: 5 }),
      'steps[0].config.tolerated_failure_percent',
      /not both/,
    ],
    [map({}, { retry: { max_attempts: 2 } }), 'steps[0].retry', /a map step has none of its own/],
    [
      map({ steps: [{ id: 'show', type: 'log', config: { message: '{{item.name | shout}}' } }] }),
      'steps[0].config.steps[0].config.message',
      /^\{\{item.name \| shout\}\}: unknown filter 'shout'$/,
    ],
    [
      map({ steps: [{ id: 'show', type: 'log', config: { message: '{{steps.later.output}}' } }] }),
      'steps[0].config.steps[0].config',
      /steps.later, which does not exist/,
    ],
    [map({ steps: [] }), 'steps[0].config.steps', /at least 1/],
    [
      { id: 'l', type: 'log', config: { message: 'n {{index}}' } },
      'steps[0].config.message',
      /^\{\{index\}\} exists only in the steps of a map$/,
    ],
  ])('refuses %j at %s', (step, path, message) => {
    const found = problems(step);
    expect(found.map((p) => p.path)).toContain(path);
    expect(found.find((p) => p.path === path)!.message).toMatch(message);
  });

  it("a map's steps read the item, the index, earlier steps and their own item's earlier steps; later steps its output", () => {
    expect(
      problems(
        { id: 'first', type: 'transform', config: { mapping: { a: 1 } } },
        map({
          tolerated_failure_percent: 5,
          steps: [
            { id: 'a', type: 'transform', config: { mapping: { n: '{{index}}', name: '{{ item.name }}' } } },
            { id: 'b', type: 'log', config: { message: '{{steps.a.output.name}} {{steps.first.output.a}}' } },
          ],
        }),
        { id: 'after', type: 'log', config: { message: '{{steps.each.output | length}}' } },
      ),
    ).toEqual([]);
    expect(problems(map({}), { id: 'after', type: 'log', config: { message: '{{steps.show.output}}' } })).toEqual([
      {
        path: 'steps[1].config',
        message:
          "refers to steps.show, a step of a map: only the later steps of its item read it (after the map, read the map's output)",
      },
    ]);
  });

  it('accepts a templated sleep, a wait with its match, and a child workflow', () => {
    expect(
      problems(
        { id: 'nap', type: 'sleep', config: { duration: '{{trigger.wait}}' } },
        { id: 'until', type: 'sleep', config: { until: '2030-01-31T09:00:00Z' } },
        {
          id: 'paid',
          type: 'wait_for_event',
          config: {
            event: 'payment.received',
            match: 'data.order_id == {{trigger.id}}',
            timeout: '1h',
            lookback: '5m',
          },
        },
        { id: 'child', type: 'workflow', config: { workflow: 'code:billing', input: { id: '{{trigger.id}}' } } },
      ),
    ).toEqual([]);
  });
});

describe('a match expression', () => {
  it.each([
    ['data.order_id == 42', 'order_id', 42],
    ['data.customer.id=="a"', 'customer.id', 'a'],
    ['data.status == paid', 'status', 'paid'],
    ['data.id == {{trigger.id}}', 'id', 7],
    ['data.id == "ord-{{trigger.id}}"', 'id', 'ord-7'],
    ['data.id == {{trigger.name}}', 'id', '42'],
  ])('%s matches data.%s against %j', (text, path, value) => {
    const parsed = parseMatch(text);
    const render = (t: string) => t.replace('{{trigger.id}}', '7').replace('{{trigger.name}}', '42');
    const lone = (t: string) => (t === '{{trigger.id}}' ? 7 : t === '{{trigger.name}}' ? '42' : render(t));
    expect(parsed.path).toBe(path);
    expect(matchValue(parsed.value, lone)).toEqual(value);
  });
});
