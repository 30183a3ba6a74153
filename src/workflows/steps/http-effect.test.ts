import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../errors.js';
import { parseDefinition } from '../schema.js';

const withEffect = (effect: unknown) => ({
  name: 'pay',
  steps: [
    {
      id: 'charge',
      type: 'http_request',
      config: { method: 'POST', url: 'https://bank.example.com/charges', body: { amount: 5 } },
      effect,
    },
  ],
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

describe("an http_request step's effect at save time", () => {
  it('accepts a reconcile GET, atMostOnce, and the intent alone', () => {
    expect(problems(withEffect({ reconcile: { url: 'https://bank.example.com/charges/by-key' } }))).toEqual([]);
    expect(
      problems(
        withEffect({
          reconcile: { url: '{{trigger.bank}}/x', happened_when: [200, 201], not_happened_when: [404, 410] },
        }),
      ),
    ).toEqual([]);
    expect(problems(withEffect({ at_most_once: true }))).toEqual([]);
    expect(problems(withEffect({}))).toEqual([]);
  });

  it.each([
    [{ reconcile: { url: 'https://x.example.com', method: 'POST' } }, 'steps[0].effect.reconcile.method'],
    [{ reconcile: {} }, 'steps[0].effect.reconcile.url'],
    [{ reconcile: { url: 'file:///etc/passwd' } }, 'steps[0].effect.reconcile.url'],
    [
      { reconcile: { url: 'https://x.example.com', happened_when: [99] } },
      'steps[0].effect.reconcile.happened_when[0]',
    ],
    [{ reconcile: { url: 'https://x.example.com', body: 'x' } }, 'steps[0].effect.reconcile'],
    [{ at_most_once: 'yes' }, 'steps[0].effect.at_most_once'],
    [{ reconcile: { url: 'https://x.example.com', happened_when: [404] } }, 'steps[0].effect.reconcile'],
    [{ reconsile: { url: 'https://x.example.com' } }, 'steps[0].effect'],
  ])('refuses %j, naming %s', (effect, path) => {
    const found = problems(withEffect(effect));
    expect(found.map((p) => p.path)).toContain(path);
  });
});
