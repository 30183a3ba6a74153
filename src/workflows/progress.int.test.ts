import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { SAMPLE } from '../cli/sample.js';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';
import { readStepStats } from './progress.js';
import { storedWorkflows } from '../app/workflows.js';

describe.each(backends)('step statistics on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });

  it('records the durations of steps whose completions share commits, each at most once (every one with a single writer)', async () => {
    const t = await testEngine(backend);
    close = t.close;
    const service = storedWorkflows(t.engine, { secretKey: randomBytes(32) });
    const wf = await service.definitions.create(SAMPLE);
    const ids = await Promise.all(
      Array.from(
        { length: 10 },
        async (_, i) => (await service.executions.execute(wf.id, { trigger_data: { name: `n${i}` } })).execution_id,
      ),
    );
    await Promise.all(ids.map((id) => t.engine.runtime.handle(id).result()));
    const stats = (await readStepStats(t.engine.store, wf.id))!;
    expect(Object.keys(stats).sort()).toEqual(['greet', 'profile', 'record']);
    for (const durations of Object.values(stats)) {
      // PostgreSQL: commits running side by side may overwrite each other's additions (see projectStepStats)
      if (backend.name === 'sqlite') expect(durations).toHaveLength(10);
      else expect(durations.length).toBeGreaterThanOrEqual(1);
      expect(durations.length).toBeLessThanOrEqual(10);
      for (const ms of durations) expect(ms).toBeGreaterThanOrEqual(0);
    }
  });

  it('goes on from the row another process wrote: a process reads it once, then updates what it committed', async () => {
    const t = await testEngine(backend);
    close = t.close;
    const first = storedWorkflows(t.engine, { secretKey: randomBytes(32) });
    const wf = await first.definitions.create(SAMPLE);
    const run = async (service: typeof first) =>
      t.engine.runtime.handle((await service.executions.execute(wf.id, {})).execution_id).result();
    await run(first);
    await run(first);
    const other = await t.second();
    const second = storedWorkflows(other, { secretKey: randomBytes(32) });
    // only the other process's run workers are left to run its executions
    await t.engine.close();
    await other.runtime.handle((await second.executions.execute(wf.id, {})).execution_id).result();
    await other.runtime.handle((await second.executions.execute(wf.id, {})).execution_id).result();
    const stats = (await readStepStats(other.store, wf.id))!;
    for (const durations of Object.values(stats)) expect(durations).toHaveLength(4);
  });
});
