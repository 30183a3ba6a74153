import { randomBytes } from 'node:crypto';
import { createEngine } from '../dist/engine.js';
import { SAMPLE } from '../dist/cli/sample.js';
import { storedWorkflows } from '../dist/app/workflows.js';

/**
 * Executions of a stored workflow (the sample: two transforms and a log, templates and all)
 * through the interpreter and the engine's run workers in this process, `inFlight` at a time.
 */
export async function benchStored(
  database: string,
  executions: number,
  inFlight: number,
): Promise<Record<string, number>> {
  const engine = await createEngine({ database });
  try {
    const service = storedWorkflows(engine, { secretKey: randomBytes(32) });
    const wf = await service.definitions.create(SAMPLE);
    const run = async (i: number) => {
      const { execution_id } = await service.executions.execute(wf.id, {
        trigger_data: { name: `user-${i}`, tags: ['a', 'b'] },
      });
      await engine.runtime.handle(execution_id).result({ pollMs: 50 });
    };
    for (let i = 0; i < 5; i++) await run(-i);
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < executions) await run(next++);
      }),
    );
    return { stored_exec_per_s: executions / ((performance.now() - started) / 1000) };
  } finally {
    await engine.close();
  }
}
