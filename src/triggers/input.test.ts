import { describe, expect, it } from 'vitest';
import { mapInput, validateInputMapping } from './input.js';

const event = {
  id: 'evt_1',
  source: 'shop.orders',
  'detail-type': 'Order Placed',
  time: '2024-05-01T10:00:00Z',
  detail: {
    user: { id: 'u_1', tier: 'gold' },
    items: [{ sku: 'A1' }, { sku: 'B2', tags: ['x', 'y'] }],
    'odd key': 1,
    "it's": 2,
    zero: 0,
    off: false,
    none: null,
  },
};

describe('mapInput', () => {
  const rows: Array<[string, unknown, unknown]> = [
    ['the whole event', '$', event],
    ['a top-level field', '$.id', 'evt_1'],
    ['a hyphenated field', '$.detail-type', 'Order Placed'],
    ['a nested object', '$.detail.user', { id: 'u_1', tier: 'gold' }],
    ['an array index', '$.detail.items[0]', { sku: 'A1' }],
    ['a field of an indexed element', '$.detail.items[1].sku', 'B2'],
    ['an index of an index', '$.detail.items[1].tags[1]', 'y'],
    ['a quoted key', "$.detail['odd key']", 1],
    ['a double-quoted key', '$.detail["odd key"]', 1],
    ['an escaped quote in a key', "$.detail['it\\'s']", 2],
    ['a quoted key at the root', "$['source']", 'shop.orders'],
    [
      'falsy values are found, not null',
      { zero: '$.detail.zero', off: '$.detail.off', none: '$.detail.none' },
      { zero: 0, off: false, none: null },
    ],
    ['a missing field is null', '$.detail.missing', null],
    ['a field under a missing parent is null', '$.detail.account.owner', null],
    ['an index past the end is null', '$.detail.items[5]', null],
    ['an index into an object is null', '$.detail.user[0]', null],
    ['a name on an array is null (no length)', '$.detail.items.length', null],
    ['an inherited property is null', '$.detail.user.toString', null],
    ['a literal string', 'hello', 'hello'],
    ['literal numbers, booleans, null', [1, true, null], [1, true, null]],
    [
      'a mapping object',
      { session_id: '$.id', user: '$.detail.user', first: '$.detail.items[0]', const: 'literal', n: 3 },
      { session_id: 'evt_1', user: { id: 'u_1', tier: 'gold' }, first: { sku: 'A1' }, const: 'literal', n: 3 },
    ],
    [
      'nested objects and arrays are rendered',
      { meta: { from: '$.source', kind: 'order', ids: ['$.id', '$.detail.user.id', 'x'] } },
      { meta: { from: 'shop.orders', kind: 'order', ids: ['evt_1', 'u_1', 'x'] } },
    ],
    [
      'missing paths inside a mapping are null',
      { a: '$.nope', b: { c: '$.detail.nope[0]' } },
      { a: null, b: { c: null } },
    ],
  ];

  it.each(rows)('%s', (_name, mapping, expected) => {
    expect(validateInputMapping(mapping)).toEqual([]);
    expect(mapInput(mapping, event)).toEqual(expected);
  });

  it('copies what it finds, so the run cannot change the event', () => {
    const input = mapInput({ user: '$.detail.user' }, event) as { user: { tier: string } };
    input.user.tier = 'silver';
    expect(event.detail.user.tier).toBe('gold');
  });

  it('returns null for paths that do not validate instead of reading them', () => {
    const polluted = { a: { __proto__: { secret: 1 } } };
    expect(mapInput({ x: '$.a.__proto__', y: '$.a.constructor', z: '$..a' }, polluted)).toEqual({
      x: null,
      y: null,
      z: null,
    });
  });

  it('reads only own array elements', () => {
    const list = Object.setPrototypeOf(
      ['a'],
      Object.create(Array.prototype, { 1: { value: 'inherited' } }),
    ) as string[];
    expect(mapInput(['$.list[0]', '$.list[1]'], { list })).toEqual(['a', null]);
  });

  it('refuses __proto__ even when the event holds it as an own key', () => {
    const data = JSON.parse('{"a": {"__proto__": {"secret": 1}}}') as unknown;
    expect(mapInput("$['a']['__proto__']", data)).toBeNull();
    expect(mapInput("$['a']", data)).toEqual(JSON.parse('{"__proto__": {"secret": 1}}'));
  });
});

describe('validateInputMapping', () => {
  const rows: Array<[string, unknown, Array<[string, RegExp]>]> = [
    ['a valid mapping', { a: '$', b: "$.x[0]['y z'].w", c: 'text', d: [1, { e: '$.id' }], f: null }, []],
    ['a valid top-level path', '$.detail', []],
    ['__proto__ segment', '$.detail.__proto__', [['input', /must not read '__proto__'/]]],
    ['constructor segment', { a: '$.detail.constructor' }, [['input.a', /must not read 'constructor'/]]],
    ['prototype segment, quoted', { a: "$['prototype']" }, [['input.a', /must not read 'prototype'/]]],
    ['__proto__ as a mapping key', JSON.parse('{"__proto__": "$.id"}'), [['input.__proto__', /not allowed as a key/]]],
    ['constructor as a nested key', { a: { constructor: 1 } }, [['input.a.constructor', /not allowed as a key/]]],
    ['an empty name', { a: '$.detail..user' }, [['input.a', /no field name after '.' at 8/]]],
    ['a trailing dot', { a: '$.' }, [['input.a', /no field name/]]],
    ['a recursive-descent star', { a: '$.detail.*' }, [['input.a', /no field name/]]],
    ['a missing dot', { a: '$detail' }, [['input.a', /unexpected "d" at 1/]]],
    ['a negative index', { a: '$.items[-1]' }, [['input.a', /bad bracket at 7/]]],
    ['an unclosed quote', { a: "$['a" }, [['input.a', /bad bracket/]]],
    ['an unclosed bracket', { a: "$['a'" }, [['input.a', /bad bracket/]]],
    ['a bad escape', { a: "$['a\\b']" }, [['input.a', /bad bracket/]]],
    ['a leading-zero index', { a: '$.items[01]' }, [['input.a', /bad bracket/]]],
    ['a path inside an array', { a: ['ok', '$.x.'] }, [['input.a[1]', /no field name/]]],
    ['a non-JSON value', { a: () => 1 }, [['input.a', /JSON value \(got function\)/]]],
    ['undefined', undefined, [['input', /JSON value \(got undefined\)/]]],
    ['a non-finite number', { a: NaN }, [['input.a', /finite number/]]],
    ['an odd key is quoted in the path', { 'a b': '$.' }, [['input["a b"]', /no field name/]]],
    [
      'every problem, in order',
      { a: '$.', b: { c: '$.constructor' }, d: 'ok' },
      [
        ['input.a', /no field name/],
        ['input.b.c', /constructor/],
      ],
    ],
  ];

  it.each(rows)('%s', (_name, mapping, expected) => {
    const problems = validateInputMapping(mapping);
    expect(problems.map((p) => p.path)).toEqual(expected.map(([path]) => path));
    problems.forEach((problem, i) => {
      expect(problem.message).toMatch(expected[i]![1]);
    });
  });

  it('prefixes paths with the given root', () => {
    expect(validateInputMapping({ a: '$.' }, 'rules[0].input')).toEqual([
      { path: 'rules[0].input.a', message: expect.stringMatching(/no field name/) },
    ]);
  });
});
