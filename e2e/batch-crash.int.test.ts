import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { runScript } from './child.js';

describe.each(backends)('a batch across a SIGKILL on $name (brief 004 §15)', (backend) => {
  // the 30th journal append of the batch's transaction: some executions are written, none committed
  it('a kill -9 while the batch is being written: after the restart each input has run exactly once', async () => {
    const database = await backend.create();
    const out = join(mkdtempSync(join(tmpdir(), 'rl-batch-')), 'out.json');
    const killed = await runScript('e2e/batch-child.ts', database, out, 'journal:beforeCommit', '30');
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const finished = await runScript('e2e/batch-child.ts', database, out);
    expect(finished.code, finished.stderr).toBe(0);
    const { batch, count, batches } = JSON.parse(readFileSync(out, 'utf8'));
    expect(batch).toMatchObject({ status: 'success', counts: { success: 20 }, progress: { ended: 20, total: 20 } });
    expect(new Set(batch.execution_ids).size).toBe(20);
    expect(count).toBe(20);
    expect(batches).toBe(1);
  }, 120_000);
});
