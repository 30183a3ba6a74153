import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createEngine, type Engine } from '../../src/engine.js';
import type { Workflow } from '../../src/runtime/workflow.js';
import type { ScenarioContext } from './context.js';
import { ROOT } from './proc.js';

/**
 * The code workflows of the chaos scenarios, as a module `runledger worker --workflows` loads
 * (it imports the built package). `effects`: three steps, each a POST of `<n>:s<i>` to the echo
 * server with the step's idempotency key. `timers`: a step, a durable sleep of `input.sleepMs`,
 * a step — each step's effect carries the wall time it ran at.
 */
const SOURCE = (root: string) => `import { workflow } from '${pathToFileURL(join(root, 'dist/index.js')).href}';

const post = (echo, effect, key) =>
  fetch(echo + '/effect', { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify({ effect }) })
    .then((res) => { if (!res.ok) throw new Error('echo answered ' + res.status); return res.json(); });

export const effects = workflow('chaos-effects-code', async (ctx, input) => {
  for (let i = 1; i <= 3; i++) await ctx.step('s' + i, ({ idempotencyKey }) => post(input.echo, input.n + ':s' + i, idempotencyKey));
  return input.n;
});

export const timers = workflow('chaos-timers', async (ctx, input) => {
  await ctx.step('before', ({ idempotencyKey }) => post(input.echo, input.n + ':before', idempotencyKey));
  await ctx.sleep('nap', input.sleepMs);
  await ctx.step('after', ({ idempotencyKey }) => post(input.echo, input.n + ':after', idempotencyKey));
  return input.n;
});
`;

export interface CodeWorkflows {
  /** The module's path, for `runledger worker --workflows`. */
  module: string;
  effects: Workflow<{ n: number; echo: string }>;
  timers: Workflow<{ n: number; echo: string; sleepMs: number }>;
  /** An engine on the database that starts runs and runs none (`workers: false`). */
  engine: Engine;
}

export async function codeWorkflows(ctx: ScenarioContext, database: string): Promise<CodeWorkflows> {
  const module = join(ctx.dir, 'workflows.mjs');
  writeFileSync(module, SOURCE(ROOT));
  const loaded = (await import(pathToFileURL(module).href)) as Pick<CodeWorkflows, 'effects' | 'timers'>;
  const engine = await createEngine({ database, workers: false, workflows: [loaded.effects, loaded.timers] });
  ctx.defer(() => engine.close().catch(() => {}));
  return { module, engine, ...loaded };
}
