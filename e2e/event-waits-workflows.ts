import { workflow } from '../src/runtime/workflow.js';

/*
 * The code workflows `runledger serve --workflows e2e/event-waits-workflows.ts` runs in e2e/event-waits.int.test.ts:
 * runs that wait for business events by correlation, are cancelled by one, or are signalled with start.
 */

interface Payment {
  id: string;
  detail: { order_id: string; amount: number };
}

/** Waits for the payment of its order (`POST /events`, detail-type `payment.received`), then records it in a step. */
// the input is read by the match expression ('input.order_id'), not by the code
export const awaitPayment = workflow('await-payment', async (ctx, _input: { order_id: string }) => {
  const paid = await ctx.waitForEvent<Payment>('payment.received', {
    match: 'data.order_id == input.order_id',
    timeout: '10m',
  });
  if (!paid) return { paid: false };
  const receipt = await ctx.step('receipt', async () => ({ event: paid.id, amount: paid.detail.amount }));
  return { paid: true, ...receipt };
});

/** Sleeps an hour; an `order.cancelled` event for its order cancels it. */
export const order = workflow(
  'order',
  { cancelOn: [{ event: 'order.cancelled', match: 'data.order_id == input.order_id' }] },
  async (ctx, input: { order_id: string }) => {
    await ctx.sleep('ship-later', '1h');
    return { shipped: input.order_id };
  },
);

/** Waits for signal `decision`: started by signal-with-start in the test. */
export const approval = workflow('approval', async (ctx, input: { user: string }) => {
  const decision = await ctx.waitForEvent<{ ok: boolean }>('decision', { timeout: '10m' });
  return { user: input.user, ok: decision?.ok ?? null };
});
