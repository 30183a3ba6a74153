import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../engine.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { mount } from './app.js';
import { replayRoutes } from './routes/replay.js';

/* POST /runs/{id}/replay: a run recorded by one deploy, replayed against the code another server runs. */

const v1 = workflow('greet', { version: '1' }, async (ctx, name: string) => {
  const hello = await ctx.step('hello', async () => `hello ${name}`);
  return ctx.step('shout', async () => hello.toUpperCase());
});
const v2 = workflow('greet', { version: '2' }, async (ctx, name: string) => {
  await ctx.sleep('think', '1s');
  const hello = await ctx.step('hello', async () => `hello ${name}`);
  return ctx.step('shout', async () => hello.toUpperCase());
});

describe.each(backends)('replay against the running code on $name', (backend) => {
  it("answers whether the server's code replays a run, and 404 for no such run", async () => {
    const database = await backend.create();
    const recorder = await createEngine({ database, workflows: [v1], pollMs: 20 });
    await (await recorder.start(v1, 'ada', { id: 'g1' })).result({ pollMs: 20 });
    await recorder.close();
    const replay = async (workflows: (typeof v1)[], id: string) => {
      const engine = await createEngine({ database, workflows, workers: false });
      try {
        const res = await mount(new Hono(), replayRoutes(engine)).fetch(
          new Request(`http://api/runs/${id}/replay`, { method: 'POST' }),
        );
        return { status: res.status, body: await res.json() };
      } finally {
        await engine.close();
      }
    };
    expect(await replay([v1], 'g1')).toEqual({
      status: 200,
      body: { run_id: 'g1', workflow: 'greet', replays: true, divergence: null },
    });
    expect(await replay([v2], 'g1')).toEqual({
      status: 200,
      body: {
        run_id: 'g1',
        workflow: 'greet',
        replays: false,
        divergence:
          "call 1: the history has `ctx.step('hello')`, the code now calls `ctx.sleep('think')` — guard the change with `ctx.patched('…')`",
      },
    });
    expect((await replay([v2], 'nobody')).status).toBe(404);
  }, 30_000);
});
