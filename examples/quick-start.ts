import { createEngine, TerminalError } from 'runledger';

const engine = await createEngine({ database: 'runledger.db' }); // or 'postgres://…'

// the journal: the same idempotency key again returns the first append and writes nothing
const order = [{ type: 'order.placed', data: { total: 42 } }];
const placed = await engine.journal.append('order-1', order, { idempotencyKey: 'order-1:placed' });
console.log(placed.duplicate ? 'order-1 was placed before: nothing written' : 'order-1 placed');

// a durable subscription: handler writes and the cursor advance commit together
await engine.subscribe('invoices', { streamPrefix: 'order-' }, async (event, { tx }) => {
  await tx.projectionPut({ name: 'invoice', key: event.streamId, value: event.data });
});

// the task queue: idempotency keys, ordering keys, retries with jittered backoff, dead letters
const email = { to: 'ada@example.com' };
const { task } = await engine.queue.enqueue('email', email, { idempotencyKey: 'welcome-ada', orderingKey: 'ada' });
engine.work('email', async (payload: { to: string }) => {
  if (!payload.to.includes('@')) throw new TerminalError('bad address'); // straight to the dead letters
  return { sent: true };
});

while ((await engine.queue.get(task.id)).state !== 'completed') await new Promise((r) => setTimeout(r, 50));
console.log('email task:', (await engine.queue.get(task.id)).result); // { sent: true }
await engine.close();
