import { describe, expect, it } from 'vitest';
import { ValidationError } from './errors.js';
import { checkJson, checkName, checkStorable, checkText, MAX_JSON_DEPTH } from './json.js';

const nested = (depth: number, leaf: unknown = 1): unknown => {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { a: value } : [value];
  return value;
};

function problem(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error('no ValidationError was thrown');
}

describe('checkText', () => {
  it.each([
    ['a\u0000b', 'name: must not contain the character U+0000 (at index 1)'],
    ['x\ud800', 'name: must be well-formed Unicode (it has an unpaired surrogate at index 1)'],
    ['\udc00y', 'name: must be well-formed Unicode (it has an unpaired surrogate at index 0)'],
    ['\ude00\ud83d', 'name: must be well-formed Unicode (it has an unpaired surrogate at index 0)'],
  ])('refuses %j', (text, message) => {
    expect(problem(() => checkText('name', text)).message).toBe(message);
  });

  it('accepts paired surrogates, other control characters and ordinary text', () => {
    for (const text of ['😀', 'a\u0001b\tc', 'ünï ✓', '']) expect(checkText('name', text)).toBe(text);
  });
});

describe('checkStorable and checkJson', () => {
  it('names the field holding U+0000 or a lone surrogate, in a value or a key', () => {
    expect(problem(() => checkJson('trigger_data', { a: [1, { b: 'x\u0000' }] }, 1e6)).path).toBe(
      'trigger_data.a[1].b',
    );
    const key = problem(() => checkJson('detail', { 'bad key': { 'k\ud800': 1 } }, 1e6));
    expect(key.path).toBe('detail["bad key"]');
    expect(key.message).toBe(
      'detail["bad key"]: has a key "k\\ud800" that must be well-formed Unicode (it has an unpaired surrogate at index 1)',
    );
    expect(problem(() => checkStorable('data', 'top\u0000')).path).toBe('data');
  });

  it('refuses nesting past the limit without recursing, naming the limit', () => {
    for (const depth of [MAX_JSON_DEPTH + 1, 5_000, 100_000]) {
      const error = problem(() => checkJson('payload', nested(depth), 1e9));
      expect(error.message).toContain(`nests deeper than the limit of ${MAX_JSON_DEPTH} levels`);
    }
    expect(checkJson('payload', nested(MAX_JSON_DEPTH), 1e6)).toBeGreaterThan(0);
    expect(() => checkStorable('body', nested(11), 10)).toThrow('nests deeper than the limit of 10 levels');
    expect(() => checkStorable('body', nested(10), 10)).not.toThrow();
  });

  it('agrees with the walk where the serialized text alone cannot tell', () => {
    // a backslash-u or many brackets inside strings send it to the walk, which accepts them
    for (const value of [{ path: 'C:\\users\\u1' }, { s: '['.repeat(300) }, { k: 'é😀', n: [[[1]]] }])
      expect(checkJson('payload', value, 1e6)).toBeGreaterThan(0);
    expect(problem(() => checkJson('payload', { long: 'x'.repeat(300), bad: 'a\u0000' }, 1e6)).path).toBe(
      'payload.bad',
    );
  });

  it('still checks size and serializability', () => {
    expect(problem(() => checkJson('payload', { s: 'x'.repeat(100) }, 50)).message).toMatch(
      /over the limit of 50 bytes/,
    );
    expect(problem(() => checkJson('payload', 10n, 50)).message).toMatch(/not JSON-serializable/);
  });
});

describe('checkName', () => {
  it('refuses empty, long, NUL and lone surrogates', () => {
    expect(() => checkName('id', '')).toThrow('id: must be a non-empty string');
    expect(() => checkName('id', 'x'.repeat(5), 4)).toThrow('over the limit of 4');
    expect(() => checkName('id', 'a\u0000')).toThrow('U+0000');
    expect(() => checkName('id', '\ud800')).toThrow('unpaired surrogate');
    expect(checkName('id', 'ok😀')).toBe('ok😀');
  });
});

describe('checkJson of a cycle', () => {
  it('says it is not serializable rather than too deep', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(problem(() => checkJson('payload', cyclic, 1e6)).message).toMatch(
      /^payload: is not JSON-serializable \(Converting circular structure/,
    );
  });
});
