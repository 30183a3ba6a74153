// A run that waits for a business event by correlation: the payment of its order, which the payment service sends
// to POST /events knowing the order, not the run. An `order.cancelled` event for the order cancels the run.
// docs/events.md says how matching works, what `lookback` is for and what a crash can do.
import { workflow } from 'runledger';
import { Client } from 'runledger/client';
import { startServer } from 'runledger/server';

interface Order {
  order_id: string;
  total: number;
}

/** The envelope of a `payment.received` event, as the run receives it. */
interface Payment {
  id: string;
  detail: { order_id: string; amount: number };
}

const orderPayment = workflow(
  'order-payment',
  { cancelOn: [{ event: 'order.cancelled', match: 'data.order_id == input.order_id' }] },
  async (ctx, order: Order) => {
    // a payment that arrived up to 10 minutes before the wait began is taken too: nothing is lost to a race
    const paid = await ctx.waitForEvent<Payment>('payment.received', {
      match: 'data.order_id == input.order_id',
      timeout: '1d',
      lookback: '10m',
    });
    if (!paid) return { order: order.order_id, status: 'expired' };
    const charged = await ctx.step('charge', async ({ idempotencyKey }) => {
      // a real charge passes idempotencyKey to the payment provider: a retry after a crash charges once
      return { amount: paid.detail.amount, reference: `ch-${idempotencyKey.slice(-8)}` };
    });
    const shipment = await ctx.step('ship', async () => `ship-${order.order_id}`);
    return { order: order.order_id, status: 'shipped', charged: charged.amount, shipment };
  },
);

const server = await startServer({
  database: 'runledger.db',
  port: 0,
  dataDir: '.runledger',
  codeWorkflows: [orderPayment],
});
const payments = new Client({ url: server.url });

// order 42: its payment may arrive before or after its run waits; the same event id again is stored once
const paidRun = await server.engine.start(orderPayment, { order_id: '42', total: 30 }, { id: 'order-42' });
const payment = {
  source: 'payments',
  'detail-type': 'payment.received',
  id: 'pay-42',
  detail: { order_id: '42', amount: 30 },
};
await payments.sendEvent(payment);
console.log(await paidRun.result()); // { order: '42', status: 'shipped', charged: 30, shipment: 'ship-42' }

// order 43 is cancelled before it is paid: the run ends cancelled, whoever sent the event
const unpaid = await server.engine.start(orderPayment, { order_id: '43', total: 12 }, { id: 'order-43' });
await payments.sendEvent({
  source: 'shop',
  'detail-type': 'order.cancelled',
  id: 'cancel-43',
  detail: { order_id: '43' },
});
const ended = await unpaid.result().then(
  () => 'not cancelled',
  (error: Error) => error.name,
);
console.log('order 43:', ended); // order 43: CancelledError

await server.close();
