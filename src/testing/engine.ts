import { createEngine, type Engine } from '../engine.js';
import type { Backend } from './backends.js';

/**
 * An engine on a fresh database of `backend`, plus a second "process" (its own engine and store)
 * on the same database, for tests. `close()` closes both.
 *
 * @example const { engine, close } = await testEngine(backends[0]);
 */
export async function testEngine(
  backend: Backend,
  options: Parameters<typeof createEngine>[0] = {},
): Promise<{ engine: Engine; second: () => Promise<Engine>; close: () => Promise<void> }> {
  const database = await backend.create();
  const engines: Engine[] = [await createEngine({ pollMs: 200, ...options, database })];
  return {
    engine: engines[0]!,
    second: async () => {
      const engine = await createEngine({ pollMs: 200, ...options, database });
      engines.push(engine);
      return engine;
    },
    close: async () => {
      for (const engine of engines.reverse()) await engine.close();
    },
  };
}

/** Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
