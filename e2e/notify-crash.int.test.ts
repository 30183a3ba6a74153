import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { freePort, type Served, serve } from './child.js';

/*
 * A delivery across a SIGKILL of `runledger serve` (needs `tsc -p tsconfig.build.json` first): the receiver holds the
 * first request open and the server is killed with it in flight; the restarted server sends the same delivery again,
 * under the same `runledger-delivery`, and the event is delivered once.
 */

interface Received {
  delivery: string;
  body: string;
  verified: boolean;
}

async function receiver() {
  const state = { received: [] as Received[], secret: '', held: [] as ServerResponse[] };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(req.headers['runledger-signature'])) ?? [];
      const mac = createHmac('sha256', state.secret).update(`${t}.${body}`).digest();
      const verified = v1 !== undefined && timingSafeEqual(mac, Buffer.from(v1, 'hex'));
      state.received.push({ delivery: String(req.headers['runledger-delivery']), body, verified });
      // the first request is held open: the server is killed while it waits for the answer
      if (state.received.length === 1) state.held.push(res);
      else res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const close = () => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  };
  return Object.assign(state, { url, close });
}

describe.each(backends)('a notification across a kill -9 of runledger serve on $name', (backend) => {
  const servers: Served[] = [];
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) s.proc.kill('SIGKILL');
    for (const close of closers.splice(0)) await close();
  });

  it('delivers a failed run once, under one delivery id, after the server died mid-delivery', async () => {
    const database = await backend.create();
    const dataDir = mkdtempSync(join(tmpdir(), 'runledger-notify-'));
    const env = { RUNLEDGER_HTTP_ALLOW: '127.0.0.1', RUNLEDGER_DATA_DIR: dataDir };
    const start = async () => {
      const served = await serve(database, [], env);
      servers.push(served);
      return served;
    };
    const call = async (url: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return text === '' ? null : JSON.parse(text);
    };

    const r = await receiver();
    closers.push(r.close);
    const first = await start();
    const created = await call(first.url, 'POST', '/notifications', {
      name: 'ops',
      url: r.url,
      events: ['run.failed'],
      body: { text: 'run {{run.id}} failed' },
    });
    r.secret = created.secret;
    // a stored workflow whose one request finds nobody listening: its run fails at once
    const closed = await freePort();
    const wf = await call(first.url, 'POST', '/workflows', {
      name: 'doomed',
      steps: [
        {
          id: 'call',
          type: 'http_request',
          retry: { max_attempts: 1, backoff_seconds: 1, backoff_rate: 1 },
          config: { method: 'POST', url: `http://127.0.0.1:${closed}/nobody` },
        },
      ],
    });
    await call(first.url, 'POST', `/workflows/${wf.id}/execute`, { trigger_data: {} });
    await eventually(() => r.received.length === 1, 20_000);
    first.proc.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    for (const res of r.held.splice(0)) res.destroy();

    const second = await start();
    const page = await eventually(async () => {
      const p = await call(second.url, 'GET', `/notifications/${created.id}/deliveries`);
      return p.deliveries[0]?.status === 'delivered' ? p : undefined;
    }, 30_000);
    expect(page.deliveries).toHaveLength(1);
    const [delivery] = page.deliveries;
    expect(delivery.attempts.at(-1)).toMatchObject({ status: 200, error: null });
    expect(r.received.length).toBeGreaterThanOrEqual(2);
    expect(new Set(r.received.map((x) => x.delivery))).toEqual(new Set([delivery.id]));
    expect(r.received.every((x) => x.verified)).toBe(true);
    expect(new Set(r.received.map((x) => x.body)).size).toBe(1);
    expect(JSON.parse(r.received[0]!.body).text).toBe(`run ${delivery.run_id} failed`);
    // nothing more comes: the delivery is done
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(r.received.filter((x) => x.delivery === delivery.id).length).toBe(r.received.length);
  });
});
