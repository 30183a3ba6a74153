import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { RUN_QUEUE } from '../runtime/runtime.js';
import { RUN_VIEW, type RunView } from '../runtime/read/view.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';

const HOUR = 3_600_000;
const steps = [{ id: 'a', type: 'transform', config: { mapping: { x: 1 } } }];

// the 002 brief's per-execution ttl, as a workflow's default retention that overrides the policy's runs age
describe.each(backends)("a workflow's ttl on $name", (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });

  it('deletes its executions once past it though the policy keeps runs longer, and keeps them until then though the policy would not', async () => {
    const made = await testEngine(backend, { pollMs: 100 });
    close = made.close;
    const engine: Engine = made.engine;
    const service = storedWorkflows(engine, { secretKey: randomBytes(32) });
    const short = await service.definitions.create({ name: 'short', ttl: '1h', steps });
    const long = await service.definitions.create({ name: 'long', ttl: '1y', steps });
    const plain = await service.definitions.create({ name: 'plain', steps });
    const run = async (workflowId: string) => {
      const { execution_id } = await service.executions.execute(workflowId, {});
      await eventually(async () => (await engine.run(execution_id)).status === 'success');
      return execution_id;
    };
    const old = await run(short.id);
    const fresh = await run(short.id);
    const kept = await run(long.id);
    const other = await run(plain.id);
    await eventually(async () =>
      (await engine.store.taskStats()).every((q) => q.queue !== RUN_QUEUE || q.running + q.ready === 0),
    );
    // `old` ended two hours ago: the database clock cannot be moved, so its view's times are
    const view = (await engine.store.projectionGet({ name: RUN_VIEW, key: old })) as RunView;
    await engine.store.projectionPut({
      name: RUN_VIEW,
      key: old,
      value: { ...view, createdAt: view.createdAt - 2 * HOUR, updatedAt: view.updatedAt - 2 * HOUR },
    });

    const dry = await engine.retention.prune({ runs: 30 * 24 * HOUR }, { dryRun: true, pauseMs: 0 });
    expect(dry).toEqual([expect.objectContaining({ kind: 'runs', runs: 1 })]);
    expect((await engine.run(old)).status).toBe('success');

    // the policy keeps runs 30 days: the short workflow's ttl deletes `old`, and nothing else
    const [first] = await engine.retention.prune({ runs: 30 * 24 * HOUR }, { pauseMs: 0 });
    expect(first).toMatchObject({ kind: 'runs', runs: 1 });
    await expect(engine.run(old)).rejects.toThrow(/not found/);
    expect(await engine.journal.readStream(`run:${old}`)).toEqual([]);
    expect((await service.executions.list(short.id)).executions.map((e) => e.execution_id)).toEqual([fresh]);
    for (const id of [fresh, kept, other]) expect((await engine.run(id)).status).toBe('success');

    // the policy deletes every finished run: one of a workflow without a ttl goes, the two within theirs stay
    await eventually(async () => (await engine.store.now()) > (await engine.run(other)).updatedAt);
    const [second] = await engine.retention.prune({ runs: 0 }, { pauseMs: 0 });
    expect(second).toMatchObject({ kind: 'runs', runs: 1 });
    await expect(engine.run(other)).rejects.toThrow(/not found/);
    expect((await service.executions.list(plain.id)).executions).toEqual([]);
    expect((await service.executions.get(short.id, fresh)).status).toBe('success');
    expect((await service.executions.get(long.id, kept)).status).toBe('success');
  });

  it('refuses a ttl out of range with a ValidationError (400) naming ttl, on create and on update', async () => {
    const made = await testEngine(backend);
    close = made.close;
    const service = storedWorkflows(made.engine, { secretKey: randomBytes(32) });
    await expect(service.definitions.create({ name: 'bad', ttl: '30m', steps })).rejects.toMatchObject({
      problems: [{ path: 'ttl' }],
    });
    await expect(service.definitions.create({ name: 'bad', ttl: '11y', steps })).rejects.toMatchObject({
      problems: [{ path: 'ttl', message: 'must be from 1h to 10y' }],
    });
    const wf = await service.definitions.create({ name: 'good', ttl: '30d', steps });
    expect((await service.definitions.get(wf.id)).ttl).toBe('30d');
    await expect(service.definitions.update(wf.id, { name: 'good', ttl: '0h', steps })).rejects.toMatchObject({
      problems: [{ path: 'ttl' }],
    });
  });
});
