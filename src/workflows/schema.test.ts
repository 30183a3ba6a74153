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

  it.each(['https://api.example.com/x?y=1', 'HTTP://example.com', '{{secrets.api_url}}/orders', 'https://{{trigger.host}}/x', '{{trigger.url}}'])('accepts %s', (url) => {
    expect(problems(withUrl(url))).toEqual([]);
  });
});
