import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../errors.js';
import { parseDefinition } from '../schema.js';
import type { Scope } from '../template/render.js';
import { skipReason, truthy } from './guard.js';

const scope = (steps: Scope['steps']): Scope => ({
  trigger: {},
  steps,
  secrets: {},
  execution: { id: 'ex_1' },
  workflow: { id: 'wf_1' },
});
const NO_ARTIFACT =
  "{{steps.wait_word.output.body.artifact_id | default('')}}{{steps.wait_powerpoint.output.body.artifact_id | default('')}}";

function problems(compensate: object): { path: string; message: string }[] {
  const definition = {
    name: 'g',
    steps: [
      {
        id: 'create',
        type: 'http_request',
        config: { method: 'POST', url: 'https://svc.example/s' },
        compensate: { method: 'DELETE', url: 'https://svc.example/s/{{steps.create.output.body.id}}', ...compensate },
      },
      { id: 'wait_word', type: 'http_request', config: { url: 'https://svc.example/w' } },
      { id: 'wait_powerpoint', type: 'http_request', config: { url: 'https://svc.example/p' } },
    ],
  };
  try {
    parseDefinition(definition);
  } catch (error) {
    if (error instanceof ValidationError) return error.problems;
    throw error;
  }
  return [];
}

describe('a compensation with a condition (brief 004 §8.2)', () => {
  it.each([
    [undefined, false],
    [null, false],
    [false, false],
    [0, false],
    ['', false],
    ['  ', false],
    ['art-1', true],
    ['false', true],
    [1, true],
    [true, true],
    [[], true],
    [{}, true],
  ])('reads %j as %s', (value, expected) => {
    expect(truthy(value)).toBe(expected);
  });

  it('skips `unless` when a later step left an artifact, and runs when none did (a step that never ran reads as absent)', () => {
    expect(skipReason({ unless: NO_ARTIFACT }, scope({}), new Set())).toBeNull();
    expect(
      skipReason(
        { unless: NO_ARTIFACT },
        scope({ wait_word: { output: { body: { artifact_id: 'art-9' } } } }),
        new Set(),
      ),
    ).toBe(`unless: ${NO_ARTIFACT} is "art-9"`);
  });

  it('skips `when` when it renders falsy, saying what it rendered', () => {
    const when = '{{steps.a.output.count}}';
    expect(skipReason({ when }, scope({ a: { output: { count: 0 } } }), new Set())).toBe(`when: ${when} is 0`);
    expect(skipReason({ when }, scope({ a: { output: { count: 2 } } }), new Set())).toBeNull();
  });

  it('a condition over a path that is not there, without default, fails as a config would', () => {
    expect(() => skipReason({ when: '{{steps.a.output.count}}' }, scope({}), new Set())).toThrow(
      /steps\.a\.output\.count/,
    );
  });

  it('accepts conditions that read a later step, at save time', () => {
    expect(problems({ unless: NO_ARTIFACT })).toEqual([]);
    expect(problems({ when: '{{steps.create.output.body.id}}' })).toEqual([]);
  });

  it.each([
    [{ when: 'yes' }, 'steps[0].compensate.when', /must be a template/],
    [{ unless: '{{steps.nowhere.output.x}}' }, 'steps[0].compensate.unless', /steps\.nowhere, which does not exist/],
    [{ when: '{{steps.wait_word.output | shout}}' }, 'steps[0].compensate.when', /shout/],
    [{ when: '{{callback.url}}' }, 'steps[0].compensate.when', /wait_for_callback/],
    [{ when: 3 }, 'steps[0].compensate.when', /string/],
  ])('refuses %j with a 400 naming %s', (compensate, path, message) => {
    const found = problems(compensate);
    expect(found).toEqual([{ path, message: expect.stringMatching(message) }]);
  });
});
