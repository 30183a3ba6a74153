import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { parseDefinition } from './schema.js';
import { durationSeconds, rerunTimeouts } from './timeouts.js';

const steps = parseDefinition({
  name: 't',
  steps: [
    { id: 'call', type: 'http_request', timeout_seconds: 10, config: { url: 'https://svc.example/a' } },
    {
      id: 'wait',
      type: 'poll',
      config: { url: 'https://svc.example/b', until: { path: 'body.done', equals: true }, max_wait_seconds: 60 },
    },
    {
      id: 'both',
      type: 'parallel',
      config: { branches: { x: [{ id: 'inner', type: 'http_request', config: { url: 'https://svc.example/c' } }] } },
    },
  ],
}).steps;

describe('a rerun with longer timeouts (brief 004 §7.2)', () => {
  it.each([
    ['90s', 90],
    ['10m', 600],
    ['2h', 7200],
    ['1.5m', 90],
    [45, 45],
    ['10', null],
    ['0s', null],
    ['-5s', null],
    [0, null],
    ['ten minutes', null],
    [null, null],
  ])('reads %j as %s seconds', (value, expected) => {
    expect(durationSeconds(value)).toBe(expected);
  });

  it("sets a poll's max_wait_seconds, another step's timeout_seconds, a branch step's too, and leaves the rest as they were", () => {
    const { steps: out, seconds } = rerunTimeouts(steps, { wait: '10m', call: '2m', inner: 30 });
    expect(seconds).toEqual({ wait: 600, call: 120, inner: 30 });
    expect(out[0]).toMatchObject({ id: 'call', timeout_seconds: 120 });
    expect(out[1]).toMatchObject({ id: 'wait', config: { max_wait_seconds: 600 } });
    expect((out[2] as any).config.branches.x[0]).toMatchObject({ id: 'inner', timeout_seconds: 30 });
    expect(steps[1]).toMatchObject({ config: { max_wait_seconds: 60 } });
  });

  it('names every bad entry timeouts.<id> at once', () => {
    let error: unknown;
    try {
      rerunTimeouts(steps, { nope: '1m', both: '1m', call: 'soon', wait: '8d', inner: '2h' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).problems.map((p) => p.path)).toEqual([
      'timeouts.nope',
      'timeouts.both',
      'timeouts.call',
      'timeouts.wait',
      'timeouts.inner',
    ]);
  });
});
