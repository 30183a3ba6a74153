import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually } from '../src/testing/engine.js';
import { call, useDashboard } from './dashboard.js';

/* "Replay against the running code" on a run page, in a real browser (needs `npm run build`). */

const module = join(mkdtempSync(join(tmpdir(), 'rl-ui-replay-')), 'workflows.mjs');
writeFileSync(
  module,
  `import { workflow } from '${resolve('dist/index.js')}';
export const greet = workflow('greet', async (ctx, name) => {
  const hello = await ctx.step('hello', async () => 'hello ' + name);
  return ctx.step('shout', async () => hello.toUpperCase());
});`,
);

describe('replay against the running code', () => {
  const ui = useDashboard(['--workflows', module]);

  it("shows on a run's page whether the server's code replays the run", async () => {
    const { server, page } = ui;
    await call(server, '/runs', { workflow: 'greet', input: 'ada', id: 'greet-ada' });
    await eventually(async () => (await call(server, '/runs/greet-ada')).status === 'success', 20_000);
    await page.goto(`${server.url}/ui/runs/greet-ada`);
    await page.getByRole('button', { name: 'Replay against the running code' }).click();
    const answer = page.locator('.replay-result');
    await answer.waitFor({ timeout: 20_000 });
    expect(await answer.textContent()).toBe('Replays on the running code');
    // nothing was written: the run's journal is as it was
    const events = await call(server, '/runs/greet-ada/events');
    expect(events.events.at(-1).type).toBe('run.completed');
  });
});
