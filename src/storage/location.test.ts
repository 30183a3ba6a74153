import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { checkLocation, explainConnectError, maskedUrl } from './location.js';

describe('checkLocation', () => {
  it('takes a file path or a postgres URL', () => {
    expect(checkLocation('runledger.db')).toBe('sqlite');
    expect(checkLocation('./data/app.db')).toBe('sqlite');
    expect(checkLocation(':memory:')).toBe('sqlite');
    expect(checkLocation('C:\\data\\app.db')).toBe('sqlite');
    expect(checkLocation('postgres://u@h:5432/db')).toBe('postgres');
    expect(checkLocation('postgresql://u@h/db')).toBe('postgres');
  });

  it.each(['postgress://u@h/db', 'mysql://root@h/db', 'file:///tmp/x.db', 'http://h/db'])(
    'refuses %s naming the scheme, the field and the accepted forms',
    (location) => {
      const scheme = location.slice(0, location.indexOf('://') + 3);
      let thrown: unknown;
      try {
        checkLocation(location, '--database');
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ValidationError);
      expect((thrown as ValidationError).path).toBe('--database');
      expect((thrown as Error).message).toBe(
        `--database: unknown scheme '${scheme}' — use a file path (SQLite) or postgres://user@host:5432/db`,
      );
    },
  );

  it('refuses an empty location', () => {
    expect(() => checkLocation('  ')).toThrow(/^database: must be a file path \(SQLite\) or postgres:/);
  });
});

describe('explainConnectError', () => {
  const url = 'postgres://ada:s3cret@db.internal:6543/orders';
  const explain = (error: object) => explainConnectError(url, Object.assign(new Error('raw'), error))?.message;

  it('never shows the password', () => {
    expect(maskedUrl(url)).toBe('postgres://ada:***@db.internal:6543/orders');
    for (const code of ['3D000', 'ECONNREFUSED', '28P01', 'ENOTFOUND'])
      expect(explain({ code })).not.toContain('s3cret');
  });

  it('says how to create a missing database', () => {
    expect(explain({ code: '3D000' })).toBe(
      "database: postgres://ada:***@db.internal:6543/orders: database 'orders' does not exist — create it: createdb -h db.internal -p 6543 -U ada orders",
    );
  });

  it('leaves the user and database to the same defaults createdb uses when the URL names none', () => {
    const error = Object.assign(new Error('raw'), { code: '3D000' });
    expect(explainConnectError('postgres://db.internal', error)?.message).toBe(
      'database: postgres://db.internal: database does not exist — create it: createdb -h db.internal -p 5432',
    );
  });

  it('asks whether PostgreSQL runs on a refused host:port, also when every address of a name refused', () => {
    expect(explain({ code: 'ECONNREFUSED' })).toBe(
      'database: postgres://ada:***@db.internal:6543/orders: connection refused — is PostgreSQL running on db.internal:6543?',
    );
    const aggregate = new AggregateError([Object.assign(new Error('::1'), { code: 'ECONNREFUSED' })], 'connect');
    expect(explainConnectError('postgres://localhost/x', aggregate)?.message).toMatch(
      /connection refused — is PostgreSQL running on localhost:5432\?$/,
    );
  });

  it('says a login was refused', () => {
    expect(explain({ code: '28P01' })).toMatch(
      /^database: postgres:\/\/ada:\*\*\*@db\.internal:6543\/orders: authentication failed for user 'ada'/,
    );
  });

  it('leaves other failures (a migration, say) to their own error', () => {
    expect(explain({ code: '42P01' })).toBeUndefined();
    expect(explainConnectError(url, new Error('boom'))).toBeNull();
  });
});
