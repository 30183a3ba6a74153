import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { apiReport } from '../scripts/api-report.js';

// reads dist/*.d.ts: `npm run build` first (as for the other tests that use the built package)
describe('the public API', () => {
  it('is the list checked in as docs/api.md (regenerate with npm run docs:api when a change is meant)', () => {
    expect(apiReport()).toBe(readFileSync('docs/api.md', 'utf8'));
  }, 60_000);

  it('keeps the store out of the Engine type: features and faces reach it through the doors (issue 39)', () => {
    const engine = readFileSync('dist/engine.d.ts', 'utf8');
    expect(engine).toMatch(/readonly runs: RunReads;/);
    expect(engine).not.toMatch(/^\s*(readonly\s+)?store\s*:/m);
  });
});
