import { describe, expect, it } from 'vitest';
import { Faults, parseRule, parseRules } from './faults.js';
import type { Rejection } from './http.js';

function field(rule: unknown): string | undefined {
  try {
    parseRule(rule, 'rule');
    return undefined;
  } catch (error) {
    return ((error as Rejection).response.body as { error: { field: string } }).error.field;
  }
}

describe('parseRule', () => {
  it('accepts each effect', () => {
    for (const rule of [
      { endpoint: 'POST /v1/layout/proposals', status: 503, times: 2 },
      { endpoint: 'GET /v1/render/jobs/{id}', status: 429, retry_after: 3 },
      { endpoint: '* /v1/artifacts/*', delay_ms: 100, times: 'always' },
      { endpoint: 'POST /v1/intake/sessions', drop: true },
      { endpoint: 'POST /v1/render/documents', job: 'fail', error: 'boom', match: { lsp: null } },
      { endpoint: 'POST /v1/layout/proposals', job: 'hang' },
      { endpoint: 'POST /v1/render/documents', callback_copies: 2 },
      { endpoint: 'POST /v1/render/jobs/{id}/cancel', cancel: 'async', cancelling_polls: 3 },
      { endpoint: 'POST /v1/layout/proposals/*/cancel', cancel: 'async', cancelling_ms: 500 },
      { endpoint: 'POST /v1/render/jobs/{id}/cancel', cancel: 'never', times: 'always' },
    ]) {
      expect(field(rule), JSON.stringify(rule)).toBeUndefined();
    }
  });

  it('names the field of a bad rule', () => {
    expect(field('x')).toBe('rule');
    expect(field({ endpoint: 'GET /x', status: 503, colour: 1 })).toBe('rule.colour');
    expect(field({ endpoint: '/x', status: 503 })).toBe('rule.endpoint');
    expect(field({ endpoint: 'GET /x' })).toBe('rule.status');
    expect(field({ endpoint: 'GET /x', status: 302 })).toBe('rule.status');
    expect(field({ endpoint: 'GET /x', status: 503, times: 0 })).toBe('rule.times');
    expect(field({ endpoint: 'GET /x', delay_ms: -1 })).toBe('rule.delay_ms');
    expect(field({ endpoint: 'GET /x', delay_ms: 1, retry_after: 2 })).toBe('rule.retry_after');
    expect(field({ endpoint: 'GET /x', job: 'fail' })).toBe('rule.job');
    expect(field({ endpoint: 'POST /x', job: 'hang', error: 'e' })).toBe('rule.error');
    expect(field({ endpoint: 'POST /x', job: 'explode' })).toBe('rule.job');
    expect(field({ endpoint: 'POST /x', status: 503, drop: true })).toBe('rule.status');
    expect(field({ endpoint: 'POST /x', status: 503, match: [] })).toBe('rule.match');
    expect(field({ endpoint: 'POST /x', callback_copies: 1 })).toBe('rule.callback_copies');
    expect(field({ endpoint: 'GET /x', callback_copies: 2 })).toBe('rule.callback_copies');
    expect(field({ endpoint: 'POST /x/cancel', cancel: 'later' })).toBe('rule.cancel');
    expect(field({ endpoint: 'POST /v1/render/documents', cancel: 'async' })).toBe('rule.cancel');
    expect(field({ endpoint: 'POST /x/cancel', cancel: 'async', cancelling_polls: 0 })).toBe('rule.cancelling_polls');
    expect(field({ endpoint: 'POST /x/cancel', cancel: 'never', cancelling_polls: 2 })).toBe('rule.cancelling_polls');
    expect(field({ endpoint: 'POST /x/cancel', cancel: 'async', cancelling_ms: 700_000 })).toBe('rule.cancelling_ms');
    expect(field({ endpoint: 'POST /x/cancel', cancel: 'async', cancelling_polls: 1, cancelling_ms: 1 })).toBe(
      'rule.cancelling_ms',
    );
    expect(field({ endpoint: 'POST /x/cancel', cancel: 'async', status: 503 })).toBe('rule.status');
  });

  it('reads one rule, a list, or { rules }', () => {
    const rule = { endpoint: 'GET /x', status: 500 };
    expect(parseRules(rule)).toEqual([rule]);
    expect(parseRules([rule, rule])).toHaveLength(2);
    expect(parseRules({ rules: [rule] })).toEqual([rule]);
  });
});

describe('Faults', () => {
  it('uses rules up in order and matches method, path and body', () => {
    const faults = new Faults();
    faults.add([
      { endpoint: 'POST /v1/layout/proposals', match: { mode: 'ai' }, status: 503, times: 2 },
      { endpoint: '* /v1/layout/proposals', status: 500 },
    ]);
    expect(faults.take('POST', '/v1/layout/proposals', { mode: 'rule_only' })?.status).toBe(500);
    expect(faults.take('POST', '/v1/layout/proposals', { mode: 'ai' })?.id).toBe('fault-1');
    expect(faults.take('POST', '/v1/layout/proposals/lsp-1', { mode: 'ai' })).toBeUndefined();
    expect(faults.take('POST', '/v1/layout/proposals', { mode: 'ai' })).toMatchObject({
      id: 'fault-1',
      remaining: 0,
      used: 2,
    });
    expect(faults.take('POST', '/v1/layout/proposals', { mode: 'ai' })).toBeUndefined();
  });
});
