import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '../src/client/client.js';
import { backends } from '../src/testing/backends.js';
import { serve, type Served } from './child.js';
import { eventually } from '../src/testing/engine.js';

const PLANTED = 'sk-e2e-planted-5f0c9a';

/** `runledger serve` with the settings of these tests; `dataDir` (its key file) outlives a restart. */
const serveHere = (database: string, dataDir: string) =>
  serve(database, [], {
    RUNLEDGER_HTTP_ALLOW: '127.0.0.1',
    RUNLEDGER_DATA_DIR: dataDir,
    RUNLEDGER_LEASE_MS: '1500',
    RUNLEDGER_POLL_MS: '100',
  });

/** The service a workflow calls: `/orders` answers 503 twice then 200; `/hold` answers only when released. */
class Target {
  readonly seen: { path: string; headers: IncomingMessage['headers']; body: string }[] = [];
  private failures = 2;
  private held: (() => void)[] = [];
  holding = true;
  server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      this.seen.push({ path: req.url!, headers: req.headers, body });
      if (req.url === '/orders' && this.failures-- > 0) return void res.writeHead(503).end('busy');
      const answer = () =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ items: ['a', 'b'], path: req.url }));
      if (req.url === '/hold' && this.holding) this.held.push(answer);
      else answer();
    });
  });
  url = '';
  async start() {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  release() {
    this.holding = false;
    for (const answer of this.held.splice(0)) answer();
  }
  count(path: string) {
    return this.seen.filter((s) => s.path === path).length;
  }
}

const definition = (hold: boolean) => ({
  name: hold ? 'hold' : 'notify-on-order',
  steps: [
    {
      id: 'step_1',
      type: 'http_request',
      retry: { max_attempts: 4, backoff_seconds: 0.05, backoff_rate: 1 },
      config: {
        method: 'POST',
        url: '{{secrets.api_url}}/orders',
        headers: { Authorization: 'Bearer {{secrets.api_key}}' },
        body: { message: '{{trigger.text}}' },
        timeout_seconds: 10,
      },
    },
    ...(hold ? [{ id: 'hold', type: 'http_request', config: { url: '{{secrets.api_url}}/hold' } }] : []),
    {
      id: 'step_2',
      type: 'transform',
      config: { template: 'Hello {{trigger.name | upper}}!', output_key: 'greeting' },
    },
    {
      id: 'step_3',
      type: 'transform',
      config: {
        mapping: { full_name: '{{trigger.first}} {{trigger.last}}', items: '{{steps.step_1.output.body.items}}' },
      },
    },
    {
      id: 'step_4',
      type: 'log',
      config: { message: 'Processed {{trigger.id | default("n/a")}} for {{secrets.api_key}}', level: 'info' },
    },
  ],
});

const trigger = { text: 'two lattes', name: 'ada', first: 'Ada', last: 'Lovelace' };

describe.each(backends)('runledger serve on $name', (backend) => {
  let target: Target;
  let database: string;
  let dataDir: string;
  const servers: Served[] = [];

  beforeEach(async () => {
    target = new Target();
    await target.start();
    database = await backend.create();
    dataDir = mkdtempSync(join(tmpdir(), 'runledger-serve-'));
  });
  afterEach(async () => {
    for (const s of servers.splice(0)) s.proc.kill('SIGKILL');
    target.release();
    target.server.closeAllConnections();
    target.server.close();
  });

  const start = async () => {
    const served = await serveHere(database, dataDir);
    servers.push(served);
    const client = new Client({ url: served.url });
    return { served, client };
  };

  it('runs a 4-step workflow with retries, a stable Idempotency-Key and masked secrets', async () => {
    const { served, client } = await start();
    await client.setSecret('api_url', target.url);
    await client.setSecret('api_key', PLANTED);
    const wf = await client.createWorkflow(definition(false));
    const { execution_id } = await client.execute(wf.id, { trigger_data: trigger });
    const record = await eventually(async () => {
      const r = await client.execution(wf.id, execution_id);
      return r.status === 'success' || r.status === 'failed' ? r : undefined;
    });
    expect(record.status, JSON.stringify(record, null, 2)).toBe('success');
    const [s1, s2, s3, s4] = record.steps;
    expect(s1).toMatchObject({
      status: 'success',
      attempts: 3,
      input: {
        method: 'POST',
        url: '***/orders',
        headers: { Authorization: 'Bearer ***' },
        body: { message: 'two lattes' },
      },
    });
    expect(s1!.output).toMatchObject({ status: 200, body: { items: ['a', 'b'] } });
    expect(s2!.output).toEqual({ greeting: 'Hello ADA!' });
    expect(s3!.output).toEqual({ full_name: 'Ada Lovelace', items: ['a', 'b'] });
    expect(s4!.output).toEqual({ message: 'Processed n/a for ***', level: 'info' });

    const orders = target.seen.filter((s) => s.path === '/orders');
    expect(orders).toHaveLength(3);
    expect(new Set(orders.map((o) => o.headers['idempotency-key'])).size).toBe(1);
    expect(orders[0]!.headers['idempotency-key']).toContain(execution_id);
    expect(orders[0]!.headers.authorization).toBe(`Bearer ${PLANTED}`);

    // the secret's value is nowhere: not in the database, not in the server's logs
    await eventually(() => served.output().includes('Processed n/a for ***'));
    expect(served.output()).not.toContain(PLANTED);
    expect(stored(database)).not.toContain(PLANTED);
    expect(stored(database)).toContain('api_key');
  });

  it('finishes an execution after the server is killed mid-run, without repeating completed steps', async () => {
    const first = await start();
    await first.client.setSecret('api_url', target.url);
    await first.client.setSecret('api_key', PLANTED);
    const wf = await first.client.createWorkflow(definition(true));
    const { execution_id } = await first.client.execute(wf.id, { trigger_data: trigger });
    await eventually(() => target.count('/hold') === 1);
    first.served.proc.kill('SIGKILL');
    await first.served.exited;

    const second = await start();
    target.release();
    const record = await eventually(async () => {
      const r = await second.client.execution(wf.id, execution_id);
      return r.status === 'success' || r.status === 'failed' ? r : undefined;
    }, 20_000);
    expect(record.status).toBe('success');
    expect(target.count('/orders')).toBe(3); // two 503s and the success, all before the kill: never again
    expect(target.count('/hold')).toBe(2); // running when the server died: at least once, with the same key
    const holds = target.seen.filter((s) => s.path === '/hold');
    expect(holds[0]!.headers['idempotency-key']).toBe(holds[1]!.headers['idempotency-key']);
    expect(record.steps.map((s) => s.status)).toEqual(['success', 'success', 'success', 'success', 'success']);
  });
});

/** Everything the database holds, as text: the SQLite file and its WAL, or a dump of the PostgreSQL database. */
function stored(database: string): string {
  if (database.startsWith('postgres'))
    return execFileSync('pg_dump', ['--data-only', database], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return [database, `${database}-wal`]
    .filter(existsSync)
    .map((file) => readFileSync(file).toString('latin1'))
    .join('');
}

describe('the Quick start: runledger serve --sample, then the CLI', () => {
  it('stores the sample once, and `runledger run --wait` follows it to success', async () => {
    const database = await backends[0]!.create();
    const server = await serve(database, ['--sample']);
    const output = () => server.output();
    try {
      const id = /sample workflow (wf_\w+)/.exec(output())![1]!;
      const cli = (...args: string[]) =>
        execFileSync(process.execPath, ['bin/runledger.js', ...args, '--url', server.url], { encoding: 'utf8' });
      const printed = cli('run', id, '--data', '{"name":"ada"}', '--wait');
      expect(printed).toMatch(/greet: success/);
      expect(printed).toMatch(/record: success/);
      expect(printed).toMatch(/execution ex_\w+ success/);
      expect(cli('executions', 'list', id)).toMatch(/ex_\w+\s+success/);
      expect(cli('workflows', 'list')).toMatch(new RegExp(`${id}\\s+v1\\s+enabled\\s+greet-and-log`));
      await eventually(() => /"msg":"Hello ADA! \(execution ex_/.test(output())).catch(() => expect(output()).toBe(''));
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
    expect(output()).toMatch(/stopped/);
  });
});
