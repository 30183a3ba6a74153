import type { Engine } from '../engine.js';
import { TerminalError } from '../errors.js';
import { formatTask } from './format.js';

/**
 * A short tour on a real database: 12 greetings in 3 ordered conversations, one flaky task that
 * succeeds on its third attempt, one that fails terminally and lands in the dead letters; a
 * subscription prints each task event as it commits. Ends when the queue is idle.
 */
export async function runDemo(engine: Engine, print: (line: string) => void): Promise<void> {
  const started = Date.now();
  const run = `demo-${started.toString(36)}`;
  await engine.subscribe(`${run}-watch`, { streamPrefix: 'task:', from: 'end' }, async (event) => {
    const data = event.data as { attempt?: number; error?: string };
    const detail = [data.attempt ? `attempt ${data.attempt}` : '', data.error ?? ''].filter(Boolean).join('  ');
    print(`${String(Date.now() - started).padStart(5)} ms  ${event.streamId.slice(5)}  ${event.type.padEnd(18)} ${detail}`);
  });

  let flaky = 0;
  engine.work('greet', async (payload: { to: string; n: number }) => ({ greeting: `Hello ${payload.to} #${payload.n}` }), { concurrency: 4 });
  engine.work('flaky', async () => {
    if (++flaky < 3) throw new Error(`upstream answered 503 (try ${flaky})`);
    return { ok: true };
  }, { backoff: { baseMs: 200, factor: 2, maxMs: 2000, jitter: 0.2 } });
  engine.work('strict', async () => {
    throw new TerminalError('the address is invalid; retrying cannot help');
  });

  const people = ['ada', 'grace', 'linus'];
  await engine.queue.enqueueMany('greet', Array.from({ length: 12 }, (_, n) => ({ payload: { to: people[n % 3], n }, orderingKey: people[n % 3]! })));
  await engine.queue.enqueue('flaky', {}, { idempotencyKey: `${run}-flaky` });
  await engine.queue.enqueue('strict', { to: 'nobody@' }, { idempotencyKey: `${run}-strict` });

  for (;;) {
    const { tasks } = await engine.store.status();
    if (tasks.ready === 0 && tasks.running === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await new Promise((resolve) => setTimeout(resolve, 300));
  const status = await engine.store.status();
  print('');
  print(`done in ${Date.now() - started} ms on ${status.dialect} (${status.location}): ${status.events} events, tasks ${JSON.stringify(status.tasks)}`);
  print('dead letters (redrive with `runledger tasks redrive <id>`):');
  for (const task of await engine.queue.dead({ limit: 5 })) print(`  ${formatTask(task)}`);
}
