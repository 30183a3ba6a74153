import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../client/client.js';
import { duration, INLINE_OUTPUT, outputLine, size, stepLines, stepOutcome } from './summary.js';

const step = (over: Partial<StepRecord>): StepRecord => ({
  step_id: 'x',
  type: 'transform',
  status: 'success',
  attempts: 1,
  started_at: null,
  finished_at: null,
  duration_ms: 12,
  input: null,
  output: null,
  error: null,
  ...over,
});

describe('the summary after start --wait', () => {
  it('says ok, reused (no duration), failed with its error, skipped; an earlier attempt of a step that succeeded shows as its attempts, not its error', () => {
    const lines = stepLines([
      step({ step_id: 'fetch', duration_ms: 1534, attempts: 3, error: 'HTTP 503 from the server' }),
      step({ step_id: 'normalize', input: { reused_from: 'ex_1' }, duration_ms: 2 }),
      step({ step_id: 'render', type: 'parallel', duration_ms: 65_000 }),
      step({
        step_id: 'word',
        parallel: 'render',
        branch: 'word',
        status: 'failed',
        error: 'Error: Image asset not found\n    at stack',
        duration_ms: 80,
      }),
      step({ step_id: 'note', status: 'skipped', duration_ms: null }),
      step({ step_id: 'wait', type: 'poll', attempts: 1, duration_ms: 500 }),
    ]);
    expect(lines).toEqual([
      '  fetch      ok       1.5 s  (3 attempts)',
      '  normalize  reused',
      '  render     ok       1m 05s',
      '    word     failed   80 ms  — Error: Image asset not found',
      '  note       skipped',
      '  wait       ok       500 ms  (1 poll)',
    ]);
  });

  it('tells a reused step from one that ran by its journaled input', () => {
    expect(stepOutcome({ status: 'success', input: { reused_from: 'ex_1' } })).toBe('reused');
    expect(stepOutcome({ status: 'success', input: { reused_from: 'ex_1', x: 1 } })).toBe('reused');
    expect(stepOutcome({ status: 'success', input: { name: 'ada' } })).toBe('ok');
    expect(stepOutcome({ status: 'failed', input: { reused_from: 'ex_1' } })).toBe('failed');
  });

  it('prints a short output in place, and only the size and where to get it for a long one', () => {
    expect(outputLine({ greeting: 'Hello ADA!' }, 'runledger executions show ex_1')).toBe(
      'output: {"greeting":"Hello ADA!"}',
    );
    const big = { text: 'x'.repeat(8_300) };
    expect(outputLine(big, 'runledger executions show ex_1')).toBe(
      'output: 8.1 KB — runledger executions show ex_1 --json, or --output out.json',
    );
    expect(outputLine({ text: 'x'.repeat(INLINE_OUTPUT) }, 'show')).toMatch(/^output: \d+ B — show --json/);
    expect(outputLine(undefined, 'show')).toBeUndefined();
    expect(outputLine(null, 'show')).toBe('output: null');
  });

  it('writes the whole output to --output and says where', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rl-summary-')), 'out.json');
    const big = { text: 'x'.repeat(8_300) };
    expect(outputLine(big, 'show', file)).toBe(`output: 8.1 KB written to ${file}`);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(big);
    expect(() => outputLine(big, 'show', join(file, 'not-a-dir', 'x.json'))).toThrow(
      /^--output: cannot write .*ENOTDIR/,
    );
  });

  it('says durations and sizes the way a person reads them', () => {
    expect([0.4, 999, 1000, 59_949, 60_000, 125_000].map(duration)).toEqual([
      '0 ms',
      '999 ms',
      '1.0 s',
      '59.9 s',
      '1m 00s',
      '2m 05s',
    ]);
    expect([0, 1023, 1024, 8300, 3 * 1024 * 1024].map(size)).toEqual(['0 B', '1023 B', '1.0 KB', '8.1 KB', '3.0 MB']);
  });
});
