import { describe, expect, it } from 'vitest';
import { RetryAfterError, StepTimedOutError, TerminalError, TimeoutError } from '../errors.js';
import { errorClassOf } from './error-class.js';

const withStatus = (status: number, error: Error = new Error(`${status}`)) => Object.assign(error, { status });
const coded = (code: string) => Object.assign(new Error(code), { code });

describe('errorClassOf (brief 004 §5.1)', () => {
  it('sorts by HTTP status, then by name, then by socket code on the error or its cause', () => {
    const cases: [unknown, string][] = [
      [withStatus(500), '5xx'],
      [withStatus(503), '5xx'],
      [withStatus(429, new RetryAfterError('slow down', 1000)), '429'],
      [new RetryAfterError('slow down', 0), '429'],
      [withStatus(408), 'timeout'],
      [withStatus(422, new TerminalError('invalid')), '4xx'],
      [new TimeoutError('step timed out after 50 ms'), 'timeout'],
      [new StepTimedOutError('poll x: its maximum wait passed'), 'timeout'],
      [coded('ECONNREFUSED'), 'network'],
      [new Error('fetch failed', { cause: coded('ECONNRESET') }), 'network'],
      [new Error('fetch failed', { cause: coded('UND_ERR_CONNECT_TIMEOUT') }), 'timeout'],
      [coded('ENOTFOUND'), 'network'],
      [new TerminalError('bad config'), 'other'],
      [new Error('boom'), 'other'],
      ['a string', 'other'],
      [null, 'other'],
    ];
    for (const [error, expected] of cases) expect(errorClassOf(error), String(error)).toBe(expected);
  });

  it('takes the class an error says it has (http_request marks its network failures and its own timeout)', () => {
    expect(errorClassOf(Object.assign(new Error('GET http://x/ timed out after 1 s'), { errorClass: 'timeout' }))).toBe(
      'timeout',
    );
    expect(errorClassOf(Object.assign(new Error('the connection closed'), { errorClass: 'network' }))).toBe('network');
    // an unknown mark is ignored
    expect(errorClassOf(Object.assign(withStatus(502), { errorClass: 'cosmic' }))).toBe('5xx');
  });
});
