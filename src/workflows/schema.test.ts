import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { parseDefinition } from './schema.js';

const withUrl = (url: string) => ({ name: 'u', steps: [{ id: 'call', type: 'http_request', config: { url } }] });

function problems(input: unknown): { path: string; message: string }[] {
  try {
    parseDefinition(input);
  } catch (error) {
    if (error instanceof ValidationError) return error.problems;
    throw error;
  }
  return [];
}

describe('parseDefinition: http_request URLs at save time', () => {
  it.each([
    ['file:///etc/passwd', 'the scheme file: is not allowed (only http: and https:)'],
    ['ftp://example.com/x', 'the scheme ftp: is not allowed (only http: and https:)'],
    ['javascript:alert(1)', 'the scheme javascript: is not allowed (only http: and https:)'],
    ['/relative/path', 'must be an absolute http: or https: URL'],
    ['https://user:pw@example.com/', 'credentials in the URL are not allowed (send an Authorization header)'],
    ['FILE://{{trigger.path}}', 'the scheme file: is not allowed (only http: and https:)'],
  ])('refuses %s', (url, message) => {
    expect(problems(withUrl(url))).toEqual([{ path: 'steps[0].config.url', message }]);
  });

  it.each([
    'https://api.example.com/x?y=1',
    'HTTP://example.com',
    '{{secrets.api_url}}/orders',
    'https://{{trigger.host}}/x',
    '{{trigger.url}}',
  ])('accepts %s', (url) => {
    expect(problems(withUrl(url))).toEqual([]);
  });
});

describe('a definition checked at save time', () => {
  it('answers the shape, the templates and the references in one answer', () => {
    const found = problems({
      name: 'x',
      steps: [
        { id: 'a', type: 'log', config: { message: '{{steps.b.output}} {{trigger.x | shout}}' } },
        { id: 'b', type: 'http_request', config: { url: 'https://example.com', headers: 'no' } },
      ],
    });
    expect(found).toEqual([
      { path: 'steps[1].config.headers', message: 'must be an object (got string)' },
      { path: 'steps[0].config.message', message: expect.stringMatching(/unknown filter 'shout'/) },
      { path: 'steps[0].config', message: 'refers to steps.b, which runs later' },
    ]);
  });

  it('says what a transform needs when it has neither template nor mapping', () => {
    expect(problems({ name: 'x', steps: [{ id: 't', type: 'transform', config: {} }] })).toEqual([
      {
        path: 'steps[0].config',
        message:
          'needs either `template` (a string, with an optional `output_key`) or `mapping` (an object), and not both',
      },
    ]);
  });

  it('speaks without zod jargon: step types, unknown fields, enums, limits, missing fields', () => {
    const found = problems({
      name: '',
      extra: 1,
      steps: [
        { id: 'a', type: 'nope', config: {} },
        { id: 'b', type: 'log', config: { message: 'x', level: 'loud', colour: 'red' } },
        { id: 'c', type: 'http_request', config: {}, retry: { max_attempts: 50 } },
      ],
    });
    const messages = found.map((p) => `${p.path}: ${p.message}`);
    expect(messages).toEqual([
      'name: must have at least 1 character',
      'steps[0].type: must be one of http_request, transform, log, poll, wait_for_callback, function, sleep, wait_for_event, workflow, generate, parallel, map',
      'steps[1].config.level: must be one of debug, info, warn, error',
      "steps[1].config: unknown field 'colour'",
      'steps[2].retry.max_attempts: must be at most 20',
      'steps[2].config.url: required',
      "(body): unknown field 'extra'",
    ]);
    for (const m of messages)
      expect(m).not.toMatch(/expected record|Invalid discriminator|Invalid input|Too big|Unrecognized/);
  });

  it('refuses a literal URL that is not http(s) at save time; a templated one is checked when it runs', () => {
    let n = 0;
    const step = (url: string) => ({ id: `call-${n++}`, type: 'http_request', config: { url } });
    expect(
      problems({
        name: 'x',
        steps: [step('file:///etc/passwd'), step('not a url'), step('{{trigger.url}}'), step('https://example.com')],
      }),
    ).toEqual([
      { path: 'steps[0].config.url', message: 'the scheme file: is not allowed (only http: and https:)' },
      { path: 'steps[1].config.url', message: 'must be an absolute http: or https: URL' },
    ]);
  });

  it('refuses an empty steps list', () => {
    expect(problems({ name: 'x', steps: [] })).toEqual([{ path: 'steps', message: 'needs at least one step' }]);
  });
});
