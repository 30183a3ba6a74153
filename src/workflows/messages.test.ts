import { describe, expect, it } from 'vitest';
import type { ValidationError } from '../errors.js';
import { MAX_MESSAGE, messageKeys, messageProblems } from './messages.js';
import { parseDefinition } from './schema.js';

const steps = [{ id: 'a', type: 'log', config: { message: 'hi' } }];

describe('a definition’s messages', () => {
  it('looks a failure up by its status, then validation (400 and 422), then its class', () => {
    expect(messageKeys({ errorClass: '4xx', status: 422 })).toEqual(['422', 'validation', '4xx']);
    expect(messageKeys({ errorClass: '4xx', status: 404 })).toEqual(['404', '4xx']);
    expect(messageKeys({ errorClass: 'timeout', status: 408 })).toEqual(['408', 'timeout']);
    expect(messageKeys({ errorClass: 'network' })).toEqual(['network']);
  });

  it('accepts known states, classes and statuses, templated over the trigger, the steps and the execution', () => {
    const definition = parseDefinition({
      name: 'm',
      states: { names: ['FAILED_RENDERING'] },
      messages: {
        states: { FAILED_RENDERING: 'We could not render {{trigger.title | default("it")}}.' },
        errors: {
          timeout: 'Too slow ({{execution.id}}).',
          '429': 'Busy.',
          '503': 'Down.',
          validation: 'Check {{steps.a.output}}.',
        },
      },
      steps,
    });
    expect(definition.messages?.errors?.['503']).toBe('Down.');
  });

  it('names every bad key and sentence by its path', () => {
    const problems = messageProblems({
      states: { names: ['DONE'] },
      messages: {
        states: { DONE: 'x'.repeat(MAX_MESSAGE + 1), GONE: 'Gone.' },
        errors: {
          '4xx': 'ok',
          '600': 'no',
          slow: 'no',
          other: '{{secrets.k}}',
          timeout: '{{steps.b.output}}',
          network: '{{trigger.x | shout}}',
        },
      },
      steps,
    });
    expect(problems.map((p) => p.path)).toEqual([
      'messages.states.GONE',
      'messages.errors.600',
      'messages.errors.slow',
      'messages.states.DONE',
      'messages.errors.other',
      'messages.errors.timeout',
      'messages.errors.network',
    ]);
    expect(problems[0]!.message).toContain('states.names (DONE)');
    expect(problems[3]!.message).toBe(`is ${MAX_MESSAGE + 1} characters long; at most ${MAX_MESSAGE} are allowed`);
  });

  it('is refused without states to name, and an empty sentence is a shape error', () => {
    const refused = (input: unknown) => {
      try {
        parseDefinition(input);
      } catch (error) {
        return (error as ValidationError).problems.map((p) => p.path);
      }
      return [];
    };
    expect(refused({ name: 'm', messages: { states: { DONE: 'Done.' } }, steps })).toEqual(['messages.states.DONE']);
    expect(refused({ name: 'm', messages: { errors: { timeout: '' } }, steps })).toEqual(['messages.errors.timeout']);
    expect(refused({ name: 'm', messages: { hints: {} }, steps })).toEqual(['messages']);
  });
});
