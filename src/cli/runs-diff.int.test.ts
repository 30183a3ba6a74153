import { describe, expect, it } from 'vitest';
import { createEngine } from '../engine.js';
import { TerminalError } from '../errors.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { eventually } from '../testing/engine.js';
import { main } from './main.js';
import { output } from './output.js';

/** Declined until the test fixes the card: the first run fails its charge, its retry gets a receipt. */
let declined = true;

const checkout = workflow('checkout', async (ctx) => {
  await ctx.step('load', async () => ({ items: 2 }));
  const receipt = await ctx.step('charge', async () => {
    if (declined) throw new TerminalError('card declined');
    return { receipt: 'r-1' };
  });
  await ctx.step('ship', async () => true);
  return receipt;
});

describe.each(backends)('runledger runs diff --database on $name', (backend) => {
  it('prints two runs step by step, the changed and added steps marked, then the values that differ', async () => {
    declined = true;
    const database = await backend.create();
    const engine = await createEngine({ database, workflows: [checkout], pollMs: 100 });
    const ended = (id: string) => eventually(async () => ['success', 'failed'].includes((await engine.run(id)).status));
    let a: string;
    let b: string;
    try {
      a = (await engine.start(checkout, {})).id;
      await ended(a);
      declined = false;
      b = await engine.runtime.restart(a, { by: 'ada', reason: 'card fixed' });
      await ended(b);
    } finally {
      await engine.close();
    }

    const run = async (...args: string[]) => {
      let printed = '';
      await main(
        ['node', 'runledger', 'runs', 'diff', a, b, '--database', database, ...args],
        output((text) => (printed += text), false),
      );
      return printed;
    };
    const text = await run();
    const lines = text.split('\n');
    expect(lines[0]).toMatch(new RegExp(`^a  ${a}  failed  checkout  `));
    expect(lines[1]).toMatch(new RegExp(`^b  ${b}  success  checkout  `));
    // a duration differs too when a busy machine made one run twice as slow (and 100 ms slower)
    expect(lines[2]).toMatch(/^the runs differ in: status, output, error(, duration)?$/);
    expect(text).toMatch(/\n[ ~] {2}load {4}success\s+1\s+\S.*\n/);
    expect(text).toMatch(/\n~ {2}charge {2}failed → success\s+1\s+.*status, output, error(, duration)?\n/);
    expect(text).toMatch(/\n\+ {2}ship {4}— → success\s+— → 1\s+.*in b only\n/);
    expect(text).toContain('charge output: null → {"receipt":"r-1"}');
    expect(text).toMatch(/charge error: ".*card declined.*" → null/);

    const json = JSON.parse(await run('--json'));
    expect(json.counts).toMatchObject({ added: 1, removed: 0 });
    expect(json.steps[2]).toMatchObject({ name: 'ship', change: 'added', a: null });
  });
});
