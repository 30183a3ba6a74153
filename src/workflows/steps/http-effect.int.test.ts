import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../../app/workflows.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';

/**
 * A bank: `POST /charges` records the charge by its Idempotency-Key, but answers the first one only after 1.5 s (the
 * step's timeout is 0.3 s: its outcome is unknown); `GET /charges/by-key` answers 503 first, then 200 with the charge
 * of the request's key, or 404.
 */
async function bank() {
  const charges = new Map<string, number>();
  const posts: string[] = [];
  let lookups = 0;
  const server = createServer((req, res) => {
    const key = req.headers['idempotency-key'] as string;
    const answer = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST') {
        posts.push(key);
        charges.set(key, charges.size + 1);
        const send = () => answer(201, { charge: charges.get(key), by: 'post' });
        if (posts.length === 1) setTimeout(send, 1500);
        else send();
        return;
      }
      if (++lookups === 1) return answer(503, { error: 'busy' });
      if (charges.has(key)) return answer(200, { charge: charges.get(key), by: 'lookup' });
      answer(404, { error: 'no such charge' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, posts, lookups: () => lookups, close: () => (server.closeAllConnections(), server.close()) };
}

describe.each(backends)('a stored http_request effect on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  let service: Awaited<ReturnType<typeof bank>> | null = null;
  afterEach(async () => {
    service?.close();
    await close?.();
  });

  it('reconciles a timed-out request by its GET (retried), and a rerun reuses the reconciled output', async () => {
    service = await bank();
    const made = await testEngine(backend, { pollMs: 50 });
    close = made.close;
    const { definitions, executions } = storedWorkflows(made.engine, {
      secretKey: Buffer.alloc(32, 7),
      allow: ['127.0.0.1'],
    });
    const { id: wid } = await definitions.create({
      name: 'charge',
      steps: [
        {
          id: 'charge',
          type: 'http_request',
          timeout_seconds: 0.3,
          retry: { max_attempts: 3, backoff_seconds: 0.01 },
          config: { method: 'POST', url: '{{trigger.bank}}/charges', body: { amount: 5 } },
          effect: { reconcile: { url: '{{trigger.bank}}/charges/by-key' } },
        },
        { id: 'note', type: 'transform', config: { template: 'charge {{steps.charge.output.body.charge}}' } },
      ],
    });
    const ended = (eid: string) =>
      eventually(async () => {
        const found = await executions.get(wid, eid);
        return ['success', 'failed'].includes(found.status) ? found : undefined;
      }, 20_000);
    const { execution_id: eid } = await executions.execute(wid, { trigger_data: { bank: service.url } });
    const record = await ended(eid);
    expect(record.status).toBe('success');
    expect(service.posts).toHaveLength(1);
    expect(service.lookups()).toBe(2);
    const charge = record.steps.find((s: { step_id: string }) => s.step_id === 'charge')!;
    expect(charge.output).toMatchObject({ status: 200, body: { charge: 1, by: 'lookup' } });

    const { execution_id: again } = await executions.rerun(wid, eid, { from_step: 'note' });
    const rerun = await ended(again);
    expect(rerun.status).toBe('success');
    expect(rerun.steps.find((s: { step_id: string }) => s.step_id === 'note')!.output).toEqual({ result: 'charge 1' });
    expect(service.posts).toHaveLength(1);
  });
});
