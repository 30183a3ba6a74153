import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { parseDefinition } from './schema.js';

const definition = (onFailure: unknown) => ({
  name: 'f',
  states: { names: ['FAILED_LAYOUT', 'DONE'] },
  steps: [
    { id: 'intake', type: 'log', config: { message: 'in' } },
    {
      id: 'render',
      type: 'parallel',
      config: { branches: { word: [{ id: 'word', type: 'log', config: { message: 'w' } }] } },
    },
    {
      id: 'layout_wait',
      type: 'poll',
      config: { url: 'https://example.com/p', until: { path: 'body.status', equals: 'complete' } },
    },
  ],
  on_failure: onFailure,
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

describe('on_failure checked at save time', () => {
  it('takes a rule and defaults max to 1', () => {
    const parsed = parseDefinition(
      definition({
        rerun_from: 'layout_wait',
        trigger_data: { mode: 'rule_only' },
        states: ['FAILED_LAYOUT'],
        when: "{{ execution.error | default('') }}",
        timeouts: { layout_wait: '10m' },
      }),
    );
    expect(parsed.on_failure).toEqual({
      rerun_from: 'layout_wait',
      trigger_data: { mode: 'rule_only' },
      states: ['FAILED_LAYOUT'],
      when: "{{ execution.error | default('') }}",
      timeouts: { layout_wait: '10m' },
      max: 1,
    });
  });

  it('refuses a step that is not a top-level step, naming the field and the steps', () => {
    expect(problems(definition({ rerun_from: 'nope' }))).toEqual([
      {
        path: 'on_failure.rerun_from',
        message: "'nope' is not a top-level step of this workflow (intake, render, layout_wait)",
      },
    ]);
    expect(problems(definition({ rerun_from: 'word' }))[0]?.path).toBe('on_failure.rerun_from');
  });

  it.each([0, 6, 1.5])('refuses max %s, naming the field and the limit', (max) => {
    const found = problems(definition({ rerun_from: 'intake', max }));
    expect(found).toHaveLength(1);
    expect(found[0]!.path).toBe('on_failure.max');
    if (max === 6) expect(found[0]!.message).toContain('at most 5');
  });

  it('refuses a state not named, a bad timeout, a when reading a secret or a missing step, and unknown fields', () => {
    expect(
      problems(
        definition({
          rerun_from: 'intake',
          states: ['FAILED_RENDER'],
          timeouts: { layout_wait: 'soon', ghost: '1m' },
          when: '{{ secrets.key }}{{ steps.ghost.output }}',
        }),
      ).map((p) => p.path),
    ).toEqual([
      'on_failure.timeouts.layout_wait',
      'on_failure.timeouts.ghost',
      'on_failure.states[0]',
      'on_failure.when',
      'on_failure.when',
    ]);
    expect(problems(definition({ rerun_from: 'intake', retries: 2 }))[0]?.path).toBe('on_failure');
    expect(problems(definition({ rerun_from: 'intake', when: '{{ trigger.x | nofilter }}' }))[0]?.path).toBe(
      'on_failure.when',
    );
  });
});
