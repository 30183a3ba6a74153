import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../engine.js';
import { backends } from '../testing/backends.js';
import { eventually } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';

// the 002 brief: `started_at: str | None`, null until the execution really starts
describe.each(backends)('an execution that is only queued on $name', (backend) => {
  const engines: Engine[] = [];
  afterEach(async () => {
    for (const engine of engines.splice(0).reverse()) await engine.close();
  });

  it('has no started_at until a worker starts its first step, and keeps when it was requested in created_at', async () => {
    const database = await backend.create();
    const secretKey = randomBytes(32);
    // a process without run workers: the execution waits in the queue
    const front = await createEngine({ database, pollMs: 100, workers: false });
    engines.push(front);
    const service = storedWorkflows(front, { secretKey });
    const wf = await service.definitions.create({
      name: 'queued',
      steps: [{ id: 'a', type: 'transform', config: { mapping: { x: 1 } } }],
    });
    const { execution_id } = await service.executions.execute(wf.id, {});
    const queued = await service.executions.get(wf.id, execution_id);
    expect(queued.started_at).toBeNull();
    expect(Date.parse(queued.created_at)).not.toBeNaN();
    expect((await service.executions.list(wf.id)).executions).toEqual([
      expect.objectContaining({ execution_id, started_at: null, created_at: queued.created_at }),
    ]);

    const back = await createEngine({ database, pollMs: 100 });
    engines.push(back);
    storedWorkflows(back, { secretKey });
    const done = await eventually(async () => {
      const r = await service.executions.get(wf.id, execution_id);
      return r.status === 'success' && r;
    });
    expect(done.started_at).toBe(done.steps[0]!.started_at);
    expect(Date.parse(done.started_at!)).toBeGreaterThanOrEqual(Date.parse(done.created_at));
    expect((await service.executions.list(wf.id)).executions[0]!.started_at).toBe(done.started_at);
  });
});
