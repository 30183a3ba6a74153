import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../src/engine.js';
import { createApp } from '../src/server/app.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { storedWorkflows } from '../src/app/workflows.js';
import { node, type Cli } from './child.js';
import { orderV1, orderV2 } from './version-workflows.js';

async function deploy(database: string, version: 'v1' | 'v2'): Promise<Cli> {
  const worker = node(['--import', 'tsx', 'e2e/version-child.ts', database, version]);
  await eventually(() => worker.output().includes('ready\n'), 20_000).catch(() => {
    throw new Error(`worker ${version} did not start: ${worker.output()}`);
  });
  return worker;
}

async function stop(worker: Cli): Promise<void> {
  worker.proc.kill('SIGTERM');
  await worker.exited;
}

const statuses = async (engine: Engine, ids: string[]) =>
  Promise.all(ids.map(async (id) => (await engine.run(id)).status));

describe.each(backends)('a deploy of v2 while v1 runs sleep, on $name', (backend) => {
  it('runs new runs on v2, leaves v1 runs waiting (visibly) until a v1 worker is back, and both finish on their own code', async () => {
    expect(orderV1.version).not.toBe(orderV2.version);
    const database = await backend.create();
    const engine = await createEngine({ database, workflows: [orderV1, orderV2], workers: false });
    const app = createApp({ engine, workflows: storedWorkflows(engine, { secretKey: randomBytes(32) }), uiDir: null });
    const get = async (path: string) => (await app.fetch(new Request(`http://local${path}`))).json() as Promise<any>;
    const workers: Cli[] = [];
    try {
      const v1Worker = await deploy(database, 'v1');
      workers.push(v1Worker);
      const old = ['old-1', 'old-2', 'old-3'];
      for (const [i, id] of old.entries()) await engine.start(orderV1, { n: i + 1 }, { id });
      await eventually(async () => (await statuses(engine, old)).every((s) => s === 'sleeping'), 20_000);

      // the deploy: v1's worker stops, v2's starts
      await stop(v1Worker);
      const v2Worker = await deploy(database, 'v2');
      workers.push(v2Worker);
      const fresh = ['new-1', 'new-2'];
      for (const [i, id] of fresh.entries()) await engine.start(orderV2, { n: i + 1 }, { id });
      for (const id of fresh)
        expect(await (await engine.runtime.handle(id)).result()).toMatchObject({
          shipped: `v2:${(fresh.indexOf(id) + 1) * 10}:${fresh.indexOf(id) % 2 === 1}`,
        });

      // the v1 runs' timers are due by now; no worker has v1, so they wait, said so in the API and the list
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(await statuses(engine, old)).toEqual(['sleeping', 'sleeping', 'sleeping']);
      const one = await get('/runs/old-1');
      expect(one).toMatchObject({ status: 'sleeping', version: orderV1.version, waiting_for_version: orderV1.version });
      const listed = await get('/runs?workflow=order&limit=10');
      const byId = new Map<string, any>(listed.runs.map((r: any) => [r.id, r]));
      for (const id of old) expect(byId.get(id)?.waiting_for_version).toBe(orderV1.version);
      for (const id of fresh)
        expect(byId.get(id)).toMatchObject({ status: 'success', version: orderV2.version, waiting_for_version: null });
      for (const id of old) {
        const types = (await engine.journal.readStream(`run:${id}`)).map((e) => e.type);
        expect(types, id).toEqual(['run.started', 'step.started', 'step.completed', 'sleep.started']);
      }

      // a worker with v1 comes back (a rollback, or an old worker kept for draining): the v1 runs end on v1's code
      const drainer = await deploy(database, 'v1');
      workers.push(drainer);
      for (const [i, id] of old.entries())
        expect(await engine.runtime.handle(id).result()).toEqual({
          shipped: `v1:${(i + 1) * 10}`,
          pid: drainer.proc.pid,
        });
      expect((await get('/runs/old-1')).waiting_for_version).toBeNull();
      for (const id of [...old, ...fresh]) {
        const types = (await engine.journal.readStream(`run:${id}`)).map((e) => e.type);
        expect(
          types.filter((t) => t === 'run.failed'),
          id,
        ).toEqual([]);
      }
      expect(
        (await engine.journal.readStream('run:old-2'))
          .filter((e) => e.type === 'step.started')
          .map((e) => (e.data as { name: string }).name),
      ).toEqual(['charge', 'ship']);
      expect(
        (await engine.journal.readStream('run:new-2'))
          .filter((e) => e.type === 'step.started')
          .map((e) => (e.data as { name: string }).name),
      ).toEqual(['charge', 'fraud-check', 'ship']);
    } finally {
      for (const w of workers) if (w.proc.exitCode === null && w.proc.signalCode === null) await stop(w);
      await engine.close();
    }
  }, 90_000);
});
