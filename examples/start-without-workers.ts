// Starting runs from a process that does not run them (an API server, a script): `workers: false`.
// The run waits in the database until a process with workers for its workflow takes it.
import { createEngine, workflow } from 'runledger';

const invoice = workflow('invoice', async (ctx, input: { order: string; total: number }) => {
  const id = await ctx.step('number', async () => `INV-${input.order}`);
  return { id, total: input.total };
});

// this process only starts and reads runs: it knows the workflow, but runs nothing
const starter = await createEngine({ database: 'runledger.db', workflows: [invoice], workers: false });
const run = await starter.start(invoice, { order: 'o-7', total: 42 }, { id: 'invoice-o-7' }); // same id again: same run
console.log('started', run.id, (await starter.run(run.id)).status);

// elsewhere (here: a second engine on the same database), a process with workers runs it
const worker = await createEngine({ database: 'runledger.db', workflows: [invoice] });
console.log(await run.result({ pollMs: 50 })); // { id: 'INV-o-7', total: 42 }
await worker.close();
await starter.close();
