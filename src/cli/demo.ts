import { createEngine } from '../engine.js';
import { TerminalError } from '../errors.js';
import { workflow } from '../runtime/workflow.js';
import { formatTask } from './format.js';

/** A sample workflow: two steps, a durable timer and a signal, with a compensation. */
export const onboard = workflow('onboard', async (ctx, input: { user: string }) => {
  const account = await ctx.step(
    'create-account',
    async ({ idempotencyKey }) => ({ id: `acct-${input.user}`, idempotencyKey }),
    {
      compensate: async () => undefined,
    },
  );
  await ctx.sleep('cool-down', '300ms');
  const approval = await ctx.waitForEvent<{ ok: boolean }>('approval', { timeout: '10s' });
  const email = await ctx.step('send-welcome', async () => ({
    to: `${input.user}@example.com`,
    approved: approval?.ok ?? false,
  }));
  return { account: account.id, email };
});

/**
 * A short tour on a real database: 12 greetings in 3 ordered conversations, one flaky task that
 * succeeds on its third attempt, one that fails terminally and lands in the dead letters, and a
 * run of the `onboard` workflow that sleeps and waits for a signal; a subscription prints each
 * task event as it commits. Ends when everything is done.
 */
export async function runDemo(database: string, print: (line: string) => void): Promise<void> {
  const engine = await createEngine({ database, workflows: [onboard] });
  try {
    await tour(engine, print, database);
  } finally {
    await engine.close();
  }
}

async function tour(
  engine: Awaited<ReturnType<typeof createEngine>>,
  print: (line: string) => void,
  database: string,
): Promise<void> {
  const started = Date.now();
  const runId = `demo-${started.toString(36)}`;
  await engine.subscribe(`${runId}-watch`, { streamPrefix: 'task:', from: 'end' }, async (event) => {
    const data = event.data as { attempt?: number; error?: string };
    const detail = [data.attempt ? `attempt ${data.attempt}` : '', data.error ?? ''].filter(Boolean).join('  ');
    const task = event.streamId.slice('task:'.length);
    print(`${String(Date.now() - started).padStart(5)} ms  ${task}  ${event.type.padEnd(18)} ${detail}`);
  });

  let flaky = 0;
  engine.work(
    'greet',
    async (payload: { to: string; n: number }) => ({ greeting: `Hello ${payload.to} #${payload.n}` }),
    { concurrency: 4 },
  );
  engine.work(
    'flaky',
    async () => {
      if (++flaky < 3) throw new Error(`upstream answered 503 (try ${flaky})`);
      return { ok: true };
    },
    { backoff: { baseMs: 200, factor: 2, maxMs: 2000, jitter: 0.2 } },
  );
  engine.work('strict', async () => {
    throw new TerminalError('the address is invalid; retrying cannot help');
  });

  const run = await engine.start(onboard, { user: 'ada' }, { id: `${runId}-onboard` });
  const people = ['ada', 'grace', 'linus'];
  await engine.queue.enqueueMany(
    'greet',
    Array.from({ length: 12 }, (_, n) => ({ payload: { to: people[n % 3], n }, orderingKey: people[n % 3]! })),
  );
  await engine.queue.enqueue('flaky', {}, { idempotencyKey: `${runId}-flaky` });
  await engine.queue.enqueue('strict', { to: 'nobody@' }, { idempotencyKey: `${runId}-strict` });
  await engine.signal(run.id, 'approval', { ok: true }, { idempotencyKey: 'demo' });
  const output = await run.result({ pollMs: 100 });

  for (;;) {
    const { tasks } = await engine.operator.status();
    if (tasks.ready === 0 && tasks.running === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await new Promise((resolve) => setTimeout(resolve, 300));
  const status = await engine.operator.status();
  print('');
  print(
    `done in ${Date.now() - started} ms on ${status.dialect} (${status.location}): ${status.events} events, tasks ${JSON.stringify(status.tasks)}`,
  );
  print(`dead letters (redrive with \`runledger tasks redrive <id> --database ${database}\`):`);
  for (const task of await engine.queue.dead({ limit: 5 })) print(`  ${formatTask(task)}`);
  const view = await engine.run(run.id);
  print(
    `workflow run ${run.id}: ${view.status} → ${JSON.stringify(output)} (timeline: \`runledger events ${run.id} --database ${database}\`)`,
  );
  for (const step of view.steps)
    print(`  ${step.name.padEnd(16)} ${step.status}  attempts ${step.attempts}  ${step.durationMs} ms`);
}
