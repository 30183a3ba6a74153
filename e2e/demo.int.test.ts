import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createSqlitePath } from '../src/testing/databases.js';

const run = promisify(execFile);

describe('runledger demo (the Quick start command)', () => {
  it('runs the queue, the dead letters and a workflow to the end, twice on one database', async () => {
    const database = createSqlitePath();
    for (let i = 0; i < 2; i++) {
      const { stdout } = await run(process.execPath, ['bin/runledger.js', 'demo', '--database', database], {
        timeout: 30_000,
      });
      expect(stdout).toMatch(/task\.completed\s+attempt 3/);
      expect(stdout).toMatch(/strict\s+dead\s+attempts 1\/5\s+last error: TerminalError/);
      expect(stdout).toMatch(
        /workflow run demo-\S+-onboard: success → \{"account":"acct-ada","email":\{"to":"ada@example.com","approved":true\}\}/,
      );
    }
  });
});
