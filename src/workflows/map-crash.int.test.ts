import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { backends } from '../testing/backends.js';
import { eventually } from '../testing/engine.js';

const src = resolve(import.meta.dirname, '..');

/**
 * The process killed: `node --import tsx <file> <database> <service> <out>`. Saves the map workflow and executes it
 * with an idempotency key (a restart starts nothing twice), works until the execution has ended, writes its record.
 */
const CHILD = `
import { writeFileSync } from 'node:fs';
import { storedWorkflows } from '${src}/app/workflows.js';
import { createEngine } from '${src}/engine.js';
import { eventually } from '${src}/testing/engine.js';

const [database, service, out] = process.argv.slice(2);
const engine = await createEngine({ database, pollMs: 50, leaseMs: 1000 });
const { definitions, executions } = storedWorkflows(engine, { secretKey: Buffer.alloc(32, 7), allow: ['127.0.0.1'] });
const name = 'map-crash';
const steps = [
  {
    id: 'each',
    type: 'map',
    config: {
      items: '{{trigger.documents}}',
      concurrency: 5,
      steps: [{ id: 'send', type: 'http_request', config: { method: 'POST', url: service + '/items', body: '{{item}}' } }],
    },
  },
];
const wid = (await definitions.named(name)) ?? (await definitions.create({ name, steps })).id;
const documents = Array.from({ length: 100 }, (_, n) => ({ n }));
const { execution_id } = await executions.execute(wid, { trigger_data: { documents }, idempotencyKey: 'documents-1' });
const done = await eventually(async () => {
  const record = await executions.get(wid, execution_id);
  return ['success', 'partial_success', 'failed', 'cancelled'].includes(record.status) ? record : undefined;
}, 60_000);
writeFileSync(out, JSON.stringify(done));
await engine.close();
`;

/** Counts each item's requests by idempotency key; answers after `delayMs`, so five are in flight at once. */
async function itemService(delayMs: number) {
  const requests: { key: string; n: number }[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const body = JSON.parse(text) as { n: number };
      requests.push({ key: String(req.headers['idempotency-key']), n: body.n });
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)), delayMs);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

function child(file: string, args: string[]) {
  const proc = spawn(process.execPath, ['--import', 'tsx', file, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    proc.on('exit', (code, signal) => done({ code, signal })),
  );
  return { proc, exited, stderr: () => stderr };
}

describe.each(backends)('a map over 100 items across a SIGKILL on $name', (backend) => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const c of closers.splice(0)) c();
  });

  it('resumes the fan-out after kill -9: every item sent under one key, only those in flight at the kill again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-map-crash-'));
    const file = join(dir, 'child.mts');
    writeFileSync(file, CHILD);
    const out = join(dir, 'out.json');
    const database = await backend.create();
    const service = await itemService(40);
    closers.push(service.close);

    const first = child(file, [database, service.url, out]);
    closers.push(() => first.proc.kill('SIGKILL'));
    await eventually(() => service.requests.length >= 30 || first.proc.exitCode !== null, 60_000);
    first.proc.kill('SIGKILL');
    expect((await first.exited).signal, first.stderr()).toBe('SIGKILL');
    const beforeRestart = service.requests.length;
    expect(beforeRestart).toBeLessThan(100);

    const second = child(file, [database, service.url, out]);
    closers.push(() => second.proc.kill('SIGKILL'));
    expect((await second.exited).code, second.stderr()).toBe(0);
    const record = JSON.parse(readFileSync(out, 'utf8'));
    expect(record.status).toBe('success');
    const results = record.steps[0].output as { status: string; output: { body: { n: number } } }[];
    expect(results.map((r) => [r.status, r.output.body.n])).toEqual(
      Array.from({ length: 100 }, (_, n) => ['success', n]),
    );

    // one key per item, never a second one: no item ran as a new step after the restart
    const keysOf = new Map<number, Set<string>>();
    for (const { key, n } of service.requests) keysOf.set(n, (keysOf.get(n) ?? new Set()).add(key));
    expect(keysOf.size).toBe(100);
    expect([...keysOf.values()].every((keys) => keys.size === 1)).toBe(true);
    expect(new Set(service.requests.map((r) => r.key)).size).toBe(100);
    // sent again (with its key) only what was in flight at the kill: at most the map's concurrency
    const again = service.requests.length - 100;
    expect(again).toBeLessThanOrEqual(5);
    const sentBefore = new Set(service.requests.slice(0, beforeRestart).map((r) => r.key));
    expect(service.requests.slice(beforeRestart).filter((r) => sentBefore.has(r.key)).length).toBe(again);
  }, 180_000);
});
