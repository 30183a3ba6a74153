import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../errors.js';
import { parseDefinition } from '../schema.js';
import { secretInAuthority } from './url.js';

describe('secretInAuthority', () => {
  it.each([
    ['http://{{secrets.x | upper}}.invalid/x', '{{secrets.x | upper}}'],
    ['https://api-{{ secrets.k }}.example.com/v1', '{{secrets.k}}'],
    ['https://{{trigger.host}}{{secrets.k}}/v1', '{{secrets.k}}'],
    ['https://user:{{secrets.k}}@example.com/', '{{secrets.k}}'],
    ['https://example.com:{{secrets.k}}/', '{{secrets.k}}'],
    // an http(s) URL's authority starts after any slashes, or none, and backslashes count as slashes
    ['https:{{secrets.k}}/x', '{{secrets.k}}'],
    ['https:\\\\{{secrets.k}}', '{{secrets.k}}'],
    [' \thttps://\n{{secrets.k}}', '{{secrets.k}}'],
  ])('finds the secret in the authority of %j', (url, found) => {
    expect(secretInAuthority(url)).toBe(found);
  });

  it.each([
    'https://api.example.com/{{secrets.k}}',
    'https://api.example.com?k={{secrets.k}}',
    'https://api.example.com#{{secrets.k}}',
    'https://api.example.com\\{{secrets.k}}',
    'https://{{trigger.host}}/{{secrets.k}}',
    // not told before it runs: the pieces of the secret are masked
    '{{secrets.webhook_url}}',
    '{{secrets.base}}/v1/items',
    'https://example.com/x',
    'https://{{secrets.k',
  ])('finds none in %j', (url) => {
    expect(secretInAuthority(url)).toBeNull();
  });
});

describe('a workflow with a secret in the host part of a URL', () => {
  it('is refused at every URL a step sends to, each problem naming its url', () => {
    const host = 'https://{{secrets.k}}.example.com/x';
    const definition = {
      name: 'hosts',
      steps: [
        {
          id: 'a',
          type: 'http_request',
          config: { method: 'GET', url: host },
          compensate: { method: 'POST', url: host },
        },
        {
          id: 'b',
          type: 'poll',
          config: { method: 'GET', url: host, until: { path: 'done', equals: true } },
          cancel: { method: 'POST', url: host },
        },
        { id: 'c', type: 'wait_for_callback', timeout_seconds: 60, config: { request: { method: 'POST', url: host } } },
        { id: 'd', type: 'http_request', config: { method: 'GET', url: 'https://example.com/{{secrets.k}}' } },
      ],
    };
    let error: unknown;
    try {
      parseDefinition(definition);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ValidationError);
    const problems = (error as ValidationError).problems ?? [];
    expect(problems.map((p) => p.path)).toEqual([
      'steps[0].config.url',
      'steps[0].compensate.url',
      'steps[1].config.url',
      'steps[1].cancel.url',
      'steps[2].config.request.url',
    ]);
    for (const problem of problems)
      expect(problem.message).toMatch(/^\{\{secrets\.k\}\} is in the host part \(userinfo, host or port\)/);
  });
});
