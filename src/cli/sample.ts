import type { Engine } from '../engine.js';
import { workflow, type Workflow } from '../runtime/workflow.js';
import type { Definitions, StoredWorkflow } from '../workflows/definitions.js';

/** The workflow `runledger serve --sample` stores: no network, so it runs anywhere. */
export const SAMPLE = {
  name: 'greet-and-log',
  description: 'Greets the trigger name, builds a profile from it and logs the result.',
  steps: [
    {
      id: 'greet',
      type: 'transform',
      config: { template: 'Hello {{trigger.name | default("stranger") | upper}}!', output_key: 'greeting' },
    },
    {
      id: 'profile',
      type: 'transform',
      config: {
        mapping: {
          greeting: '{{steps.greet.output.greeting}}',
          tags: '{{trigger.tags | default("none")}}',
          execution: '{{execution.id}}',
        },
      },
    },
    {
      id: 'record',
      type: 'log',
      config: { message: '{{steps.greet.output.greeting}} (execution {{execution.id}})', level: 'info' },
    },
  ],
};

/** Stores the sample unless a workflow of its name exists; returns it. */
export async function loadSample(definitions: Definitions): Promise<StoredWorkflow> {
  for (let after: string | undefined; ; ) {
    const page = await definitions.list({ limit: 100, ...(after ? { after } : {}) });
    const found = page.find((w) => w.name === SAMPLE.name);
    if (found) return found;
    if (page.length < 100) return definitions.create(SAMPLE);
    after = page.at(-1)!.id;
  }
}

/** The sample run's id: one per database, so a restart of `serve --sample` shows the same run instead of starting another. */
export const SAMPLE_RUN = 'run_sample-order';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Who answers the sample's approval: the server, once it has started (the workflows are registered before it exists). */
const approver: { engine: Engine | null } = { engine: null };

const samplePack = workflow('sample-pack', async (ctx, input: { items: number }) =>
  ctx.step('box', async () => {
    await pause(300);
    return { boxes: input.items };
  }),
);

/**
 * The code workflow `serve --sample` runs once, so the first run the dashboard shows does what runledger is for (about
 * 6 s, offline): a step that fails once and is retried after a backoff, a durable sleep, a wait for a signal (a person's
 * approval, answered by the sample itself), and a child run.
 */
const sampleOrder = workflow('sample-order', async (ctx, input: { order: string }) => {
  const order = await ctx.step(
    'fetch-order',
    async ({ attempt }) => {
      await pause(200);
      if (attempt === 1) throw new Error('the order service answered 503 Service Unavailable');
      return { id: input.order, items: 3 };
    },
    { retry: { maxAttempts: 3, backoff: { base: '500ms', factor: 2 } } },
  );
  await ctx.sleep('let-payment-settle', '2s');
  await ctx.step('ask-approval', async () => {
    // a person would answer from the dashboard or `runs signal`; the sample answers 1.5 s later. Not durable on
    // purpose: after a crash meanwhile the wait below gives up at its timeout and the run goes on
    setTimeout(
      () =>
        void approver.engine
          ?.signal(
            ctx.runId,
            'approval',
            { by: 'ops@example.com', approved: true },
            { idempotencyKey: 'sample-approval' },
          )
          .catch(() => undefined),
      1500,
    ).unref();
    return { asked: 'ops@example.com' };
  });
  const approval = await ctx.waitForEvent<{ by: string }>('approval', { timeout: '30s' });
  const packed = await ctx.child(samplePack, { items: order.items });
  return ctx.step('ship', async () => {
    await pause(250);
    return { order: order.id, tracking: `TRK-${order.id}`, approved_by: approval?.by ?? null, boxes: packed.boxes };
  });
});

/** The code workflows `serve --sample` registers (with workers: a process without them cannot run the sample run). */
export const SAMPLE_WORKFLOWS: Workflow[] = [sampleOrder as Workflow, samplePack as Workflow];

/** Starts the sample run unless this database has it; returns its id. */
export async function startSampleRun(engine: Engine): Promise<string> {
  approver.engine = engine;
  await engine.start(sampleOrder, { order: 'A-1042' }, { id: SAMPLE_RUN });
  return SAMPLE_RUN;
}
