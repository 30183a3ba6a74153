import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually } from '../src/testing/engine.js';
import { call, useDashboard } from './dashboard.js';

/**
 * A redriven agent event in a real browser against `runledger serve --agents` (needs `npm run build`): the event's
 * first run fails while its upstream is down; its redrive's run page links to the original run and to the diff.
 */

const folder = mkdtempSync(join(tmpdir(), 'rl-agent-redrive-'));
/** While this file exists the upstream is down: the first run fails (one attempt), the redrive's run does not. */
const down = join(folder, 'down');
const module = join(folder, 'agents.mjs');
writeFileSync(down, '');
writeFileSync(
  module,
  `import { existsSync } from 'node:fs';
import { defineAgent } from '${resolve('dist/index.js')}';
export const fragile = defineAgent('fragile', {
  ledger: { retry: { maxAttempts: 1 } },
  background: async (_input, ctx) => {
    await ctx.node('call', async () => {
      if (existsSync(${JSON.stringify(down)})) throw new Error('upstream is down');
      return 'ok';
    });
  },
});
`,
);

describe('a redriven agent run', () => {
  const ui = useDashboard(['--agents', module]);

  it('links to its original run and to the diff of the two', async () => {
    const { server, page } = ui;
    const sent = await call(server, '/agent/events', {
      agent: 'fragile',
      conversation_id: 'c-1',
      user_id: 'u-1',
      source: 'e2e',
      input_type: 'text',
      payload: { text: 'hello' },
    });
    const status = async () => (await call(server, `/agent/events/${sent.event_id}`)).status as string;
    await eventually(async () => (await status()) === 'failed', 20_000);
    rmSync(down);
    const redriven = await call(server, `/agent/events/${sent.event_id}/redrive`, { by: 'e2e' });
    expect(redriven.retry_of).toBe(sent.run_id);
    await eventually(async () => (await status()) === 'done', 20_000);

    await page.goto(`${server.url}/ui/agents/${redriven.run_id}`);
    const redriveOf = page.locator('[data-fact="redrive-of"]');
    await redriveOf.waitFor({ timeout: 20_000 });
    expect(await redriveOf.locator(`a[href$="/agents/${sent.run_id}"]`).count()).toBe(1);
    await redriveOf.getByRole('link', { name: 'compare with the original' }).click();
    await page.waitForURL(`**/ui/runs/${sent.run_id}/diff/${redriven.run_id}`);
    await page.locator('[data-fact="summary"]').waitFor({ timeout: 20_000 });
  });
});
