// A stored (JSON) workflow over HTTP, with no network: the server, a local echo target it may call
// (RUNLEDGER_HTTP_ALLOW=127.0.0.1 on the command line; `allow` here), and the typed client.
import { createServer } from 'node:http';
import { startServer } from 'runledger/server';
import { Client } from 'runledger/client';

// the echo target: answers every request with its JSON body and an `items` list
const echo = createServer((request, response) => {
  let body = '';
  request
    .on('data', (chunk) => (body += chunk))
    .on('end', () => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ echoed: JSON.parse(body || 'null'), items: ['latte', 'latte'] }));
    });
});
await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
const target = `http://127.0.0.1:${(echo.address() as { port: number }).port}/orders`;

const server = await startServer({ database: 'runledger.db', port: 0, allow: ['127.0.0.1'], dataDir: '.runledger' });
const client = new Client({ url: server.url });

await client.setSecret('api_key', 'sk-live-123'); // encrypted at rest, masked as *** wherever it would be written
const definition = {
  name: 'notify-on-order',
  steps: [
    {
      id: 'post',
      type: 'http_request',
      config: {
        method: 'POST',
        url: target,
        headers: { Authorization: 'Bearer {{secrets.api_key}}' },
        body: { text: '{{trigger.text}}' },
      },
    },
    { id: 'greet', type: 'transform', config: { template: 'Hello {{trigger.name | upper}}!', output_key: 'greeting' } },
    {
      id: 'shape',
      type: 'transform',
      config: { mapping: { greeting: '{{steps.greet.output.greeting}}', items: '{{steps.post.output.body.items}}' } },
    },
  ],
};
// one workflow per name: update it when it exists (an unchanged definition makes no new version)
const existing = (await client.workflows()).workflows.find((w) => w.name === definition.name);
const wf = existing ? await client.updateWorkflow(existing.id, definition) : await client.createWorkflow(definition);

// the same Idempotency-Key again returns the same execution
const { execution_id } = await client.execute(
  wf.id,
  { trigger_data: { name: 'ada', text: 'two lattes' } },
  { idempotencyKey: 'order-42' },
);
for await (const event of client.follow(execution_id))
  if (event.type.startsWith('step.')) console.log(event.type, event.data.name);
const execution = await client.execution(wf.id, execution_id);
console.log(execution.status, execution.steps.find((s) => s.step_id === 'shape')?.output); // success { greeting: 'Hello ADA!', items: [ 'latte', 'latte' ] }

await server.close();
echo.close();
