import { describe, expect, it } from 'vitest';
import { matches, validatePattern, type Pattern } from './pattern.js';

const event = {
  id: 'evt_1',
  source: 'shop.orders',
  'detail-type': 'Order Placed',
  time: '2024-05-01T10:00:00Z',
  detail: {
    amount: 300,
    ratio: 0.5,
    currency: 'EUR',
    paid: true,
    coupon: null,
    note: '',
    file: 'reports/2024/summary.PDF',
    tags: ['new', 'priority'],
    scores: [3, 7],
    grid: [['a', 'b'], ['c']],
    nothing: [],
    ip: '10.0.0.7',
    user: { tier: 'gold', email: 'Ann@Example.com', name: 'Ann' },
    items: [
      { sku: 'A1', qty: 2 },
      { sku: 'B2', qty: 0, gift: true },
    ],
  },
};

const detail = (fields: Pattern): Pattern => ({ detail: fields });

describe('matches', () => {
  const rows: Array<[string, Pattern, boolean]> = [
    ['top-level literal', { source: ['shop.orders'] }, true],
    ['top-level literal, other value', { source: ['shop.billing'] }, false],
    ['hyphenated envelope key', { 'detail-type': ['Order Placed'] }, true],
    ['literals are OR-ed', { source: ['a', 'shop.orders', 'b'] }, true],
    ['keys are AND-ed', { source: ['shop.orders'], 'detail-type': ['Refund'] }, false],
    ['string is case-sensitive', { source: ['Shop.Orders'] }, false],
    ['nested field', { detail: { user: { tier: ['gold'] } } }, true],
    ['nested field, other value', { detail: { user: { tier: ['silver'] } } }, false],
    ['nested field under a missing parent', { detail: { account: { tier: ['gold'] } } }, false],
    ['nested pattern over a scalar', { source: { name: ['x'] } }, false],
    ['field that is absent', detail({ missing: ['x'] }), false],
    ['number equals number', detail({ amount: [300] }), true],
    ['number compares by value (300 == 300.0)', detail({ amount: [300.0] }), true],
    ['number other value', detail({ amount: [301] }), false],
    ['number does not equal its string', detail({ amount: ['300'] }), false],
    ['boolean', detail({ paid: [true] }), true],
    ['boolean other value', detail({ paid: [false] }), false],
    ['null matches null', detail({ coupon: [null] }), true],
    ['null does not match an absent field', detail({ missing: [null] }), false],
    ['null does not match a value', detail({ currency: [null] }), false],
    ['empty string', detail({ note: [''] }), true],
    ['empty string is not absent', detail({ missing: [''] }), false],
    ['array field: any element matches', detail({ tags: ['priority'] }), true],
    ['array field: no element matches', detail({ tags: ['old'] }), false],
    ['array of numbers', detail({ scores: [7] }), true],
    ['nested arrays are flattened', detail({ grid: ['c'] }), true],
    ['object field is not a leaf value', detail({ user: ['gold'] }), false],
    ['array of objects: one element matches', detail({ items: { sku: ['B2'] } }), true],
    ['array of objects: none matches', detail({ items: { sku: ['C3'] } }), false],
    ['array of objects: fields must match in the same element', detail({ items: { sku: ['A1'], qty: [0] } }), false],
    ['array of objects: both fields in one element', detail({ items: { sku: ['B2'], qty: [0] } }), true],
    ['prefix', { source: [{ prefix: 'shop.' }] }, true],
    ['prefix, no match', { source: [{ prefix: 'billing.' }] }, false],
    ['prefix on a number', detail({ amount: [{ prefix: '3' }] }), false],
    ['prefix ignoring case', detail({ user: { email: [{ prefix: { 'equals-ignore-case': 'ann@' } }] } }), true],
    ['prefix is case-sensitive', detail({ user: { email: [{ prefix: 'ann@' }] } }), false],
    ['suffix', detail({ file: [{ suffix: '.PDF' }] }), true],
    ['suffix, no match', detail({ file: [{ suffix: '.pdf' }] }), false],
    ['suffix ignoring case', detail({ file: [{ suffix: { 'equals-ignore-case': '.pdf' } }] }), true],
    ['suffix on an array element', detail({ tags: [{ suffix: 'ity' }] }), true],
    ['equals-ignore-case', detail({ user: { email: [{ 'equals-ignore-case': 'ANN@example.COM' }] } }), true],
    [
      'equals-ignore-case, other value',
      detail({ user: { email: [{ 'equals-ignore-case': 'bob@example.com' }] } }),
      false,
    ],
    ['wildcard', detail({ file: [{ wildcard: 'reports/*/*.PDF' }] }), true],
    ['wildcard, no match', detail({ file: [{ wildcard: 'reports/*.csv' }] }), false],
    ['wildcard without a star is an exact match', detail({ file: [{ wildcard: 'reports' }] }), false],
    ['wildcard pieces must not overlap', { source: [{ wildcard: 'shop.o*orders' }] }, false],
    ['wildcard middle piece must not overlap the last', { source: [{ wildcard: 'shop*s*s' }] }, false],
    ['wildcard middle piece before the last', { source: [{ wildcard: 'shop*r*s' }] }, true],
    ['wildcard escaped star is literal', { source: [{ wildcard: 'shop\\*' }] }, false],
    ['anything-but value', detail({ currency: [{ 'anything-but': 'USD' }] }), true],
    ['anything-but the value itself', detail({ currency: [{ 'anything-but': 'EUR' }] }), false],
    ['anything-but list', detail({ currency: [{ 'anything-but': ['USD', 'GBP'] }] }), true],
    ['anything-but list containing the value', detail({ currency: [{ 'anything-but': ['USD', 'EUR'] }] }), false],
    ['anything-but number compares by value', detail({ amount: [{ 'anything-but': [300.0] }] }), false],
    ['anything-but prefix', { source: [{ 'anything-but': { prefix: 'billing.' } }] }, true],
    ['anything-but prefix of the value', { source: [{ 'anything-but': { prefix: 'shop.' } }] }, false],
    ['anything-but suffix', detail({ file: [{ 'anything-but': { suffix: '.PDF' } }] }), false],
    [
      'anything-but equals-ignore-case',
      detail({ currency: [{ 'anything-but': { 'equals-ignore-case': ['eur'] } }] }),
      false,
    ],
    ['anything-but wildcard', detail({ file: [{ 'anything-but': { wildcard: '*/lib/*' } }] }), true],
    ['anything-but on an array: one element not excluded', detail({ tags: [{ 'anything-but': 'new' }] }), true],
    [
      'anything-but on an array: every element excluded',
      detail({ tags: [{ 'anything-but': ['new', 'priority'] }] }),
      false,
    ],
    ['anything-but needs the field', detail({ missing: [{ 'anything-but': 'x' }] }), false],
    ['numeric =', detail({ amount: [{ numeric: ['=', 300] }] }), true],
    ['numeric =, other value', detail({ amount: [{ numeric: ['=', 3e2 + 1] }] }), false],
    ['numeric >', detail({ amount: [{ numeric: ['>', 299.99] }] }), true],
    ['numeric > at the boundary', detail({ amount: [{ numeric: ['>', 300] }] }), false],
    ['numeric >= at the boundary', detail({ amount: [{ numeric: ['>=', 300] }] }), true],
    ['numeric < at the boundary', detail({ amount: [{ numeric: ['<', 300] }] }), false],
    ['numeric <= at the boundary', detail({ amount: [{ numeric: ['<=', 300] }] }), true],
    ['numeric range inside', detail({ ratio: [{ numeric: ['>', 0, '<=', 1] }] }), true],
    ['numeric range, upper bound inclusive', detail({ amount: [{ numeric: ['>', 0, '<=', 300] }] }), true],
    ['numeric range, upper bound exclusive', detail({ amount: [{ numeric: ['>', 0, '<', 300] }] }), false],
    ['numeric range, lower bound exclusive', detail({ amount: [{ numeric: ['>', 300, '<', 400] }] }), false],
    ['numeric range, bounds in either order', detail({ amount: [{ numeric: ['<', 400, '>=', 300] }] }), true],
    ['numeric on an array: any element in range', detail({ scores: [{ numeric: ['>', 5] }] }), true],
    ['numeric on an array: none in range', detail({ scores: [{ numeric: ['>', 7] }] }), false],
    ['numeric ignores numeric strings', { time: [{ numeric: ['>', 0] }] }, false],
    ['exists true', detail({ currency: [{ exists: true }] }), true],
    ['exists true on an absent field', detail({ missing: [{ exists: true }] }), false],
    ['exists true on null', detail({ coupon: [{ exists: true }] }), true],
    ['exists false on an absent field', detail({ missing: [{ exists: false }] }), true],
    ['exists false on a present field', detail({ currency: [{ exists: false }] }), false],
    ['exists false under a missing parent', detail({ account: { owner: { id: [{ exists: false }] } } }), true],
    ['exists true under a missing parent', detail({ account: { owner: { id: [{ exists: true }] } } }), false],
    ['exists false under a scalar parent', detail({ currency: { code: [{ exists: false }] } }), true],
    ['exists false on an empty array', detail({ nothing: [{ exists: false }] }), true],
    ['exists true on an object (not a leaf)', detail({ user: [{ exists: true }] }), false],
    ['exists false in an array of objects', detail({ items: { gift: [{ exists: false }] } }), true],
    ['exists true in an array of objects', detail({ items: { gift: [{ exists: true }], sku: ['A1'] } }), false],
    ['cidr', detail({ ip: [{ cidr: '10.0.0.0/24' }] }), true],
    ['cidr outside the block', detail({ ip: [{ cidr: '10.0.1.0/24' }] }), false],
    ['cidr /0 matches any address', detail({ ip: [{ cidr: '0.0.0.0/0' }] }), true],
    ['cidr /32 is one address', detail({ ip: [{ cidr: '10.0.0.8/32' }] }), false],
    ['cidr on a non-address', { source: [{ cidr: '10.0.0.0/8' }] }, false],
    ['mixed list: a literal matches', detail({ currency: ['EUR', { prefix: 'US' }] }), true],
    ['mixed list: a matcher matches', detail({ currency: ['USD', { suffix: 'UR' }] }), true],
    ['mixed list: nothing matches', detail({ currency: ['USD', { prefix: 'G' }, { numeric: ['>', 0] }] }), false],
    ['mixed list: value or absent', detail({ missing: ['x', { exists: false }] }), true],
    ['own properties only', detail({ user: { constructor: [{ exists: true }] } }), false],
    ['own properties only (toString)', { toString: [{ exists: false }] }, true],
  ];

  it.each(rows)('%s', (_name, pattern, expected) => {
    expect(validatePattern(pattern)).toEqual([]);
    expect(matches(pattern, event)).toBe(expected);
  });

  it.each([
    ['undefined', undefined],
    ['null', null],
    ['a string', 'shop.orders'],
    ['a number', 42],
    ['an array', [event]],
    ['detail is a string', { ...event, detail: 'oops' }],
    ['detail is null', { ...event, detail: null }],
    ['fields are arrays of objects', { source: [{ a: 1 }], detail: [[], null] }],
  ])('does not throw or match on odd event data: %s', (_name, odd) => {
    const pattern = {
      source: ['shop.orders'],
      detail: { amount: [{ numeric: ['>', 0] }], user: { tier: [{ prefix: 'g' }] } },
    };
    expect(matches(pattern, event)).toBe(true);
    expect(matches(pattern, odd)).toBe(false);
  });

  it('reads exists:false on odd data as absent', () => {
    const pattern = { detail: { user: { tier: [{ exists: false }] } } };
    expect([undefined, null, 'x', { detail: 5 }, { detail: { user: [] } }].map((odd) => matches(pattern, odd))).toEqual(
      [true, true, true, true, true],
    );
    expect(matches(pattern, event)).toBe(false);
  });

  it('survives an array that contains itself', () => {
    const cyclic: unknown[] = ['shop.orders'];
    cyclic.push(cyclic);
    expect(matches({ source: ['shop.orders'] }, { source: cyclic })).toBe(true);
    expect(matches({ source: ['shop.billing'] }, { source: cyclic })).toBe(false);
  });

  it('does not read inherited properties of the event', () => {
    const inherited = Object.create({ source: 'shop.orders' }) as object;
    expect(matches({ source: ['shop.orders'] }, inherited)).toBe(false);
    expect(matches({ source: ['shop.orders'] }, { source: 'shop.orders' })).toBe(true);
  });
});

describe('validatePattern', () => {
  const rows: Array<[string, unknown, Array<[string, RegExp]>]> = [
    [
      'a valid pattern',
      { source: ['a'], detail: { amount: [{ numeric: ['>', 0, '<=', 5] }], tier: ['gold', null, 3, true] } },
      [],
    ],
    ['an empty pattern', {}, [['pattern', /at least one field/]]],
    ['a pattern that is not an object', ['source'], [['pattern', /must be an object/]]],
    ['null', null, [['pattern', /must be an object/]]],
    ['an empty nested object', { detail: {} }, [['pattern.detail', /at least one field/]]],
    ['a leaf that is not an array', { source: 'shop' }, [['pattern.source', /must be an array/]]],
    ['a numeric leaf', { detail: { amount: 5 } }, [['pattern.detail.amount', /must be an array/]]],
    ['an empty array', { detail: { tier: [] } }, [['pattern.detail.tier', /at least one value/]]],
    ['a nested array item', { source: [['a']] }, [['pattern.source[0]', /must be a string, number/]]],
    [
      'a matcher with two keys',
      { source: [{ prefix: 'a', suffix: 'b' }] },
      [['pattern.source[0]', /exactly one key \(got 2\)/]],
    ],
    ['an empty matcher', { source: [{}] }, [['pattern.source[0]', /exactly one key \(got 0\)/]]],
    [
      'an unknown matcher',
      { source: ['a', { contains: 'x' }] },
      [['pattern.source[1].contains', /unknown matcher 'contains'/]],
    ],
    ['prefix not a string', { source: [{ prefix: 5 }] }, [['pattern.source[0].prefix', /must be a string/]]],
    ['suffix not a string', { source: [{ suffix: ['a'] }] }, [['pattern.source[0].suffix', /must be a string/]]],
    [
      'equals-ignore-case not a string',
      { source: [{ 'equals-ignore-case': null }] },
      [['pattern.source[0].equals-ignore-case', /must be a string/]],
    ],
    [
      'exists not a boolean',
      { detail: { x: [{ exists: 'true' }] } },
      [['pattern.detail.x[0].exists', /true or false/]],
    ],
    [
      'numeric bad operator',
      { detail: { amount: [{ numeric: ['!=', 5] }] } },
      [['pattern.detail.amount[0].numeric[0]', /must be one of =, >, >=, <, <=/]],
    ],
    [
      'numeric non-number',
      { detail: { amount: [{ numeric: ['>', '5'] }] } },
      [['pattern.detail.amount[0].numeric[1]', /finite number/]],
    ],
    [
      'numeric wrong arity',
      { detail: { amount: [{ numeric: ['>', 0, '<'] }] } },
      [['pattern.detail.amount[0].numeric', /\[op, number\]/]],
    ],
    [
      'numeric not an array',
      { detail: { amount: [{ numeric: 5 }] } },
      [['pattern.detail.amount[0].numeric', /\[op, number\]/]],
    ],
    [
      'numeric two lower bounds',
      { detail: { amount: [{ numeric: ['>', 0, '>=', 5] }] } },
      [['pattern.detail.amount[0].numeric', /one lower bound/]],
    ],
    [
      'numeric = in a range',
      { detail: { amount: [{ numeric: ['=', 0, '<', 5] }] } },
      [['pattern.detail.amount[0].numeric', /one lower bound/]],
    ],
    [
      'numeric empty range',
      { detail: { amount: [{ numeric: ['>', 5, '<', 5] }] } },
      [['pattern.detail.amount[0].numeric', /empty range/]],
    ],
    [
      'numeric reversed range',
      { detail: { amount: [{ numeric: ['>=', 9, '<=', 5] }] } },
      [['pattern.detail.amount[0].numeric', /empty range/]],
    ],
    [
      'anything-but an empty list',
      { source: [{ 'anything-but': [] }] },
      [['pattern.source[0].anything-but', /at least one value/]],
    ],
    [
      'anything-but an object in a list',
      { source: [{ 'anything-but': ['a', { b: 1 }] }] },
      [['pattern.source[0].anything-but[1]', /must be a string/]],
    ],
    [
      'anything-but an unknown matcher',
      { source: [{ 'anything-but': { numeric: ['>', 1] } }] },
      [['pattern.source[0].anything-but', /prefix \| suffix/]],
    ],
    [
      'anything-but prefix not a string',
      { source: [{ 'anything-but': { prefix: 1 } }] },
      [['pattern.source[0].anything-but.prefix', /must be a string/]],
    ],
    [
      'wildcard with consecutive stars',
      { source: [{ wildcard: 'a**b' }] },
      [['pattern.source[0].wildcard', /consecutive/]],
    ],
    ['wildcard with a bad escape', { source: [{ wildcard: 'a\\b' }] }, [['pattern.source[0].wildcard', /escape/]]],
    [
      'cidr without a prefix length',
      { detail: { ip: [{ cidr: '10.0.0.1' }] } },
      [['pattern.detail.ip[0].cidr', /IPv4 CIDR/]],
    ],
    [
      'cidr with a bad octet',
      { detail: { ip: [{ cidr: '10.0.0.256/24' }] } },
      [['pattern.detail.ip[0].cidr', /IPv4 CIDR/]],
    ],
    [
      'cidr with a long prefix',
      { detail: { ip: [{ cidr: '10.0.0.0/33' }] } },
      [['pattern.detail.ip[0].cidr', /IPv4 CIDR/]],
    ],
    ['a non-finite number', { detail: { amount: [Infinity] } }, [['pattern.detail.amount[0]', /finite number/]]],
    ['an odd key is quoted in the path', { detail: { 'a b': 'x' } }, [['pattern.detail["a b"]', /must be an array/]]],
    [
      'every problem, in order',
      { source: 'x', detail: { amount: [{ numeric: ['>', 'a'] }, { exists: 1 }], user: {} } },
      [
        ['pattern.source', /must be an array/],
        ['pattern.detail.amount[0].numeric[1]', /finite number/],
        ['pattern.detail.amount[1].exists', /true or false/],
        ['pattern.detail.user', /at least one field/],
      ],
    ],
  ];

  it.each(rows)('%s', (_name, pattern, expected) => {
    const problems = validatePattern(pattern);
    expect(problems.map((p) => p.path)).toEqual(expected.map(([path]) => path));
    problems.forEach((problem, i) => {
      expect(problem.message).toMatch(expected[i]![1]);
    });
  });

  it('prefixes paths with the given root', () => {
    expect(validatePattern({ source: 'x' }, 'rules[2].pattern')).toEqual([
      { path: 'rules[2].pattern.source', message: expect.stringMatching(/must be an array/) },
    ]);
  });
});
