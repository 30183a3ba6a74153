import { describe, expect, it } from 'vitest';
import { maskPassword } from './store.js';

describe('the location shown by status', () => {
  it('masks the password wherever the connection string carries it', () => {
    expect(maskPassword('postgres://app:s3cret@db.example:5432/runledger')).toBe(
      'postgres://app:***@db.example:5432/runledger',
    );
    expect(maskPassword('postgres://app@db.example/runledger?password=s3cret&sslmode=require')).toBe(
      'postgres://app@db.example/runledger?password=***&sslmode=require',
    );
    expect(maskPassword('host=db.example password=s3cret dbname=runledger')).toBe(
      'host=db.example password=*** dbname=runledger',
    );
    expect(maskPassword('postgres://127.0.0.1:5432/runledger')).toBe('postgres://127.0.0.1:5432/runledger');
  });
});
