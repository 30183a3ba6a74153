import { createEngine, workflow } from 'runledger';

const onboard = workflow('onboard', async (ctx, input: { user: string }) => {
  const account = await ctx.step(
    'create-account',
    async ({ idempotencyKey }) => ({ id: `acct-${input.user}`, key: idempotencyKey }),
    {
      retry: { maxAttempts: 5, backoff: { base: '200ms', factor: 2, max: '30s' } },
      compensate: async (acct) => console.log('closing', acct.id), // runs if a later step fails or the run is cancelled
    },
  );
  await ctx.sleep('cool-down', '100ms'); // durable: survives restarts, holds no worker
  const approval = await ctx.waitForEvent<{ ok: boolean }>('approval', { timeout: '1h' });
  return { account: account.id, approved: approval?.ok ?? false };
});

const engine = await createEngine({ database: 'runledger.db', workflows: [onboard] });
const run = await engine.start(onboard, { user: 'ada' }, { id: 'onboard-ada' }); // same id again: same run
await engine.signal(run.id, 'approval', { ok: true }, { idempotencyKey: 'approval-1' }); // same key again: ignored
console.log(await run.result()); // { account: 'acct-ada', approved: true }
await engine.close();
