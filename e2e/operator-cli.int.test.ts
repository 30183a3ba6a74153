import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { OPERATOR_STREAM } from '../src/runtime/operate/operator.js';
import { workflow } from '../src/runtime/workflow.js';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { cli } from './child.js';

const waiter = workflow('waiter', { version: '1' }, async (ctx) => ctx.waitForEvent('go'));

async function run(...args: string[]): Promise<{ code: number | null; output: string }> {
  const c = cli(args);
  const { code } = await c.exited;
  return { code, output: c.output() };
}

describe('the operator commands', () => {
  it('pause, pauses, resume, bulk cancel (dry run first) and runs list --needs-patch against a database, each journaled with who and why', async () => {
    const database = createSqlitePath();
    const engine = await createEngine({ database, workflows: [waiter], pollMs: 50 });
    try {
      for (const id of ['w-1', 'w-2']) await engine.start(waiter, {}, { id });
      await eventually(async () =>
        (await Promise.all(['w-1', 'w-2'].map((id) => engine.run(id)))).every((v) => v.status === 'waiting'),
      );
      const db = ['--database', database];

      const refused = await run('pause', 'workflow', 'waiter', ...db);
      expect(refused.code).not.toBe(0);
      expect(refused.output).toContain('--reason');

      expect(
        (await run('pause', 'workflow', 'waiter', '--by', 'ci', '--reason', 'bad deploy', ...db)).output,
      ).toContain('workflow waiter paused');
      expect((await run('pauses', ...db)).output).toMatch(/workflow\s+waiter\s+by ci at .*: bad deploy/);
      expect(
        (await run('resume', 'workflow', 'waiter', '--by', 'ci', '--reason', 'rolled back', ...db)).output,
      ).toContain('workflow waiter resumed');

      const dry = await run(
        'bulk',
        'cancel',
        '--workflow',
        'waiter',
        '--status',
        'waiting',
        '--dry-run',
        '--by',
        'ci',
        '--reason',
        'campaign over',
        ...db,
      );
      expect(dry.output).toContain('would act on: 2');
      expect((await engine.run('w-1')).status).toBe('waiting');
      const done = await run(
        'bulk',
        'cancel',
        '--workflow',
        'waiter',
        '--status',
        'waiting',
        '--by',
        'ci',
        '--reason',
        'campaign over',
        ...db,
      );
      expect(done.output).toContain('runs.cancelled: 2');
      await eventually(async () =>
        (await Promise.all(['w-1', 'w-2'].map((id) => engine.run(id)))).every((v) => v.status === 'cancelled'),
      );

      expect((await run('runs', 'list', '--needs-patch', 'fraud-check', ...db)).output).toContain(
        "no run needs the old branch of 'fraud-check'",
      );
      const actions = (await engine.journal.readStream(OPERATOR_STREAM)).map(
        (e) => e.data as { action: string; by: string; reason: string },
      );
      expect(actions.map((a) => [a.action, a.by, a.reason])).toEqual([
        ['workflow.paused', 'ci', 'bad deploy'],
        ['workflow.resumed', 'ci', 'rolled back'],
        ['runs.cancelled', 'ci', 'campaign over'],
      ]);
    } finally {
      await engine.close();
    }
  }, 60_000);
});
