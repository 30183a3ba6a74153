import { describe, expect, it } from 'vitest';
import { blankQuoted, isPrivileged } from './audit.js';
import { actorName, whoActs } from './identity.js';

describe('who acts', () => {
  it("is the key's name, with its person; the body's by only without a key, then the fallback", () => {
    expect(actorName({ key: 'bootstrap', roles: ['admin'] })).toBe('bootstrap');
    expect(actorName({ key: 'ci', issuedTo: 'ana@example.com', roles: ['operator'] })).toBe('ci (ana@example.com)');
    expect(actorName({ key: 'k', issuedTo: 'x'.repeat(300), roles: [] })).toHaveLength(200);
    expect(whoActs({ key: 'ci', roles: ['approver'] }, 'mallory', 'api')).toBe('ci');
    expect(whoActs(undefined, 'ana', 'api')).toBe('ana');
    expect(whoActs(undefined, undefined, 'api')).toBe('api');
    expect(whoActs(undefined, undefined)).toBeUndefined();
  });
});

describe('the audit middleware', () => {
  it('audits every method but reads, except health checks and callbacks', () => {
    expect(isPrivileged('POST', '/runs')).toBe(true);
    expect(isPrivileged('DELETE', '/secrets/A')).toBe(true);
    expect(isPrivileged('PUT', '/rules/r1')).toBe(true);
    expect(isPrivileged('GET', '/audit')).toBe(false);
    expect(isPrivileged('HEAD', '/runs')).toBe(false);
    expect(isPrivileged('POST', '/callbacks/cb_token')).toBe(false);
    expect(isPrivileged('POST', '/healthz')).toBe(false);
  });

  it('blanks every quoted value of a message: a refusal may quote the input', () => {
    expect(blankQuoted(`unknown field 'password'; "hunter2" and \`x\` too`)).toBe(
      'unknown field \'…\'; "…" and `…` too',
    );
    expect(blankQuoted('value: must be a string (got number)')).toBe('value: must be a string (got number)');
  });
});
