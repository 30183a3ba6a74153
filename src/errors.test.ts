import { describe, expect, it } from 'vitest';
import { NotFoundError, StoreUnavailableError, storeUnavailable, ValidationError } from './errors.js';

const coded = (code: string, message = 'driver detail 127.0.0.1:5432') => Object.assign(new Error(message), { code });

describe('storeUnavailable', () => {
  it.each([
    [coded('ECONNREFUSED'), 'unreachable', 5],
    [coded('ECONNRESET'), 'unreachable', 5],
    [new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')], ''), 'unreachable', 5],
    [coded('57P01', 'terminating connection due to administrator command'), 'unreachable', 5],
    [coded('57P03', 'the database system is shutting down'), 'unreachable', 5],
    [coded('08006'), 'unreachable', 5],
    [coded('53300', 'too many clients'), 'unreachable', 5],
    [coded('53100', 'could not extend file: No space left on device'), 'full', 5],
    [new Error('Connection terminated unexpectedly'), 'unreachable', 5],
    [new Error('timeout exceeded when trying to connect'), 'unreachable', 5],
    [coded('SQLITE_BUSY'), 'busy', 1],
    [coded('SQLITE_BUSY_SNAPSHOT'), 'busy', 1],
    [coded('SQLITE_FULL'), 'full', 5],
    [coded('SQLITE_IOERR_WRITE'), 'io', 5],
    [coded('SQLITE_CANTOPEN'), 'io', 5],
  ])('recognises %s', (error, reason, retryAfter) => {
    const out = storeUnavailable(error);
    expect(out).toBeInstanceOf(StoreUnavailableError);
    expect(out!.reason).toBe(reason);
    expect(out!.retryAfterSeconds).toBe(retryAfter);
    expect(out!.message).not.toContain('127.0.0.1');
    expect(out!.message).toMatch(/^the database is .*; retry later$/);
  });

  it.each([
    [coded('23505', 'duplicate key value violates unique constraint')],
    [coded('SQLITE_CONSTRAINT_UNIQUE')],
    [new Error('http_request GET http://x/ failed: connect ECONNREFUSED', { cause: coded('ECONNREFUSED') })],
    [new ValidationError('x', 'bad')],
    [new NotFoundError('gone')],
    ['ECONNREFUSED'],
    [null],
  ])('leaves %s alone', (error) => {
    expect(storeUnavailable(error)).toBeNull();
  });
});
