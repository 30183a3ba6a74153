import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import type { Workflow } from '../src/runtime/workflow.js';
import { eventually } from '../src/testing/engine.js';
import { runCli as run, serve } from './child.js';

/* `runledger replay`, the real binary, against a SQLite file written by real runs: the exit code gates a deploy. */

const dir = mkdtempSync(join(tmpdir(), 'rl-replay-cli-'));
const database = join(dir, 'runs.db');

/** A TypeScript module of the order workflow: `middle` is the code between its charge and its hold. */
function module(file: string, middle: string): string {
  const path = join(dir, file);
  writeFileSync(
    path,
    `import { workflow } from '${resolve('dist/index.js')}';
export const order = workflow('order', async (ctx, input: { hold: boolean }) => {
  const receipt: string = await ctx.step('charge', async () => 'paid');
${middle}
  await ctx.step('ship', async () => 'shipped');
  if (input.hold) await ctx.sleep('hold', '1h');
  return receipt;
});`,
  );
  return path;
}

describe('runledger replay', () => {
  const deployed = module('deployed.ts', '');

  beforeAll(async () => {
    const { order } = (await import(deployed)) as { order: Workflow };
    const engine = await createEngine({ database, workflows: [order], pollMs: 20 });
    await (await engine.start(order, { hold: false }, { id: 'shipped' })).result({ pollMs: 20 });
    await engine.start(order, { hold: true }, { id: 'holding' });
    await eventually(async () => (await engine.runs.view('holding')).status === 'sleeping');
    await engine.close();
  }, 30_000);

  it('exits 0 when the code replays every run, in flight or ended', async () => {
    const answer = await run(['replay', '--workflows', deployed, '--database', database]);
    expect(answer.stderr).toBe('');
    expect(answer.code).toBe(0);
    expect(answer.stdout).toContain('holding  order  replays');
    expect(answer.stdout).toContain('shipped  order  replays');
    expect(answer.stdout).toContain('2 of 2 runs replay');
  });

  it('exits 1 and says where when a sleep is put before a recorded step', async () => {
    const slept = module('slept.ts', "  await ctx.sleep('cool-down', '1m');");
    const answer = await run(['replay', '--workflows', slept, '--database', database, '--run', 'shipped']);
    expect(answer.code).toBe(1);
    expect(answer.stdout).toContain(
      "shipped  order  diverges: call 2: the history has `ctx.step('ship')`, the code now calls `ctx.sleep('cool-down')` — guard the change with `ctx.patched('…')`",
    );
    expect(answer.stdout).toContain('0 of 1 runs replay, 1 diverge');
  });

  it('exits 0 when the same change is guarded by ctx.patched (JSON for scripts)', async () => {
    const guarded = module('guarded.ts', "  if (ctx.patched('cool-down')) await ctx.sleep('cool-down', '1m');");
    const answer = await run(['replay', '--workflows', guarded, '--database', database, '--since', '1h', '--json']);
    expect(answer.code, answer.stderr).toBe(0);
    expect(JSON.parse(answer.stdout)).toMatchObject({ replayed: 2, diverged: 0 });
  });

  it('names a --workflow the module does not have', async () => {
    const answer = await run(['replay', '--workflows', deployed, '--database', database, '--workflow', 'billing']);
    expect(answer.code).toBe(1);
    expect(answer.stderr).toContain("--workflow: 'billing' is not a workflow of");
  });

  it('reads the histories from a server with --url', async () => {
    const server = await serve(database, ['--workflows', deployed], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
    try {
      const shorter = module('shorter.ts', '  return receipt;');
      const answer = await run(['replay', '--workflows', shorter, '--url', server.url, '--workflow', 'order']);
      expect(answer.code, answer.stderr).toBe(1);
      expect(answer.stdout).toContain(
        "shipped  order  diverges: call 2: the history has `ctx.step('ship')`, the code now returns before it — guard the change with `ctx.patched('…')`",
      );
      expect(answer.stdout).toContain('0 of 2 runs replay, 2 diverge');
    } finally {
      server.proc.kill('SIGKILL');
    }
  }, 30_000);
});
