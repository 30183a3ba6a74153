import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { backends } from '../src/testing/backends.js';
import { runScript } from './child.js';

describe.each(backends)('the automatic fallback across a SIGKILL on $name', (backend) => {
  let mock: MockServices;
  beforeAll(async () => {
    mock = await startMockServices({ speed: 20, seed: 3 });
  });
  beforeEach(() => mock.reset());
  afterAll(() => mock.close());

  // execution:fallback: the failure and the rerun's start are written, not committed; execution:afterFallback: both committed
  it.each(['execution:fallback', 'execution:afterFallback'])(
    'a kill -9 at %s: after the restart the fallback has started once, never twice',
    async (point) => {
      mock.setFaults([
        {
          endpoint: 'POST /v1/layout/proposals',
          match: { mode: 'ai' },
          job: 'fail',
          error: 'AI timeout',
          times: 'always',
        },
      ]);
      const database = await backend.create();
      const out = join(mkdtempSync(join(tmpdir(), 'rl-fallback-')), 'out.json');
      const killed = await runScript('e2e/fallback-child.ts', database, mock.url, out, point);
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      const finished = await runScript('e2e/fallback-child.ts', database, mock.url, out);
      expect(finished.code, finished.stderr).toBe(0);
      const { original, reruns, count } = JSON.parse(readFileSync(out, 'utf8'));
      expect(original).toMatchObject({ status: 'failed', state: 'FAILED_LAYOUT_GENERATION' });
      const fallback = { rule: 'on_failure', attempt: 1, max: 1 };
      expect(original.reruns).toEqual([{ execution_id: expect.any(String), from_step: 'layout', fallback }]);
      expect(reruns).toHaveLength(1);
      expect(reruns[0]).toMatchObject({
        status: 'success',
        state: 'DELIVERED',
        rerun_of: { execution_id: original.execution_id, fallback },
      });
      expect(count).toBe(2);
      // the failure and the rerun's start commit together: whichever side of the commit the kill fell, one rule_only layout
      const modes = mock
        .calls({ method: 'POST', path: '/v1/layout/proposals' })
        .map((c) => (c.body as { mode: string }).mode);
      expect(modes).toEqual(['ai', 'rule_only']);
      expect(mock.calls({ method: 'POST', path: '/v1/intake/sessions' })).toHaveLength(1);
    },
    120_000,
  );
});
