import Database from 'better-sqlite3';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { node, serve, type Cli, type Served } from './child.js';

// SQLite only by nature: a file's write lock held by another process has no PostgreSQL counterpart
// (there, a writer that waits on a row lock holds a connection of its pool, not the event loop).

const LOCK_MS = 6000;

/** Another process that holds the file's write lock for `ms`: it says `locked`, then `released`. */
const HOLDER = `
const Database = require('better-sqlite3');
const db = new Database(process.argv[1], { timeout: 10000 });
db.exec('BEGIN EXCLUSIVE');
console.log('locked');
setTimeout(() => { db.exec('COMMIT'); db.close(); console.log('released'); }, Number(process.argv[2]));
`;

/** The service the run calls: `/hold` answers once released. */
function target(): { server: Server; url: Promise<string>; held: number; release: () => void } {
  const waiting: Array<() => void> = [];
  let holding = true;
  const t = {
    held: 0,
    server: createServer((_req, res) => {
      t.held += 1;
      const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      if (holding) waiting.push(answer);
      else answer();
    }),
    url: Promise.resolve(''),
    release: () => {
      holding = false;
      for (const answer of waiting.splice(0)) answer();
    },
  };
  t.url = new Promise((resolve) =>
    t.server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(t.server.address() as AddressInfo).port}`)),
  );
  return t;
}

describe('runledger serve while another process holds the SQLite write lock', () => {
  const processes: Cli[] = [];
  let service: ReturnType<typeof target> | undefined;
  afterEach(() => {
    for (const p of processes.splice(0)) p.proc.kill('SIGKILL');
    service?.release();
    service?.server.closeAllConnections();
    service?.server.close();
  });

  it('answers health and reads at once, writes 503 with Retry-After, and resumes the run and the write after the release', {
    timeout: 90_000,
  }, async () => {
    service = target();
    const database = createSqlitePath();
    const served: Served = await serve(database, [], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1', RUNLEDGER_POLL_MS: '100' });
    processes.push(served);
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const started = performance.now();
      const response = await fetch(`${served.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return {
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
        body: text === '' ? null : JSON.parse(text),
        ms: performance.now() - started,
      };
    };
    const definition = {
      name: 'through-lock',
      steps: [
        { id: 'call', type: 'http_request', config: { url: `${await service.url}/hold` } },
        { id: 'shape', type: 'transform', config: { mapping: { ok: '{{steps.call.output.body.ok}}' } } },
      ],
    };
    const workflow = await call('POST', '/workflows', definition);
    expect(workflow.status).toBe(201);
    const execute = (key: string) =>
      call('POST', `/workflows/${workflow.body.id}/execute`, { trigger_data: { key } }, { 'idempotency-key': key });
    const first = await execute('before-lock');
    expect(first.status).toBe(202);
    await eventually(() => service!.held === 1);

    const holder = node(['-e', HOLDER, database, String(LOCK_MS)]);
    processes.push(holder);
    await eventually(() => holder.output().includes('locked'), 10_000);
    const lockedAt = performance.now();
    // the run's step finishes now: its write meets the lock
    service.release();

    const write = execute('during-lock');
    const probes: Array<{ path: string; status: number; ms: number }> = [];
    while (!holder.output().includes('released') && performance.now() - lockedAt < LOCK_MS - 500) {
      for (const path of ['/healthz', '/runs']) {
        const answer = await call('GET', path);
        probes.push({ path, status: answer.status, ms: answer.ms });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const refused = await write;
    const releasedBeforeAnswer = holder.output().includes('released');
    const slowest = Math.max(...probes.map((p) => p.ms));
    console.log(
      `lock held ${LOCK_MS} ms: ${probes.length} probes, slowest ${slowest.toFixed(1)} ms; write answered ${refused.status} in ${refused.ms.toFixed(0)} ms`,
    );

    expect(probes.length).toBeGreaterThan(10);
    for (const p of probes) {
      expect(p.status, `${p.path}`).toBe(200);
      expect(p.ms, `${p.path} answered in ${p.ms.toFixed(0)} ms`).toBeLessThan(1000);
    }
    expect(releasedBeforeAnswer, 'the write waited for the release instead of answering').toBe(false);
    expect(refused.status).toBe(503);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    expect(refused.body.error).toEqual({ code: 'store_unavailable', message: 'the database is busy; retry later' });

    await eventually(() => holder.output().includes('released'), 10_000);
    const retried = await execute('during-lock');
    expect(retried.status).toBe(202);
    expect((await execute('during-lock')).body.execution_id).toBe(retried.body.execution_id);
    const finished = async (id: string) => {
      const record = await call('GET', `/workflows/${workflow.body.id}/executions/${id}`);
      return record.body.status === 'success' || record.body.status === 'failed' ? record.body : undefined;
    };
    const ran = await eventually(() => finished(first.body.execution_id), 20_000);
    expect(ran.status).toBe('success');
    expect(ran.steps.map((s: { step_id: string; status: string }) => [s.step_id, s.status])).toEqual([
      ['call', 'success'],
      ['shape', 'success'],
    ]);
    expect((await eventually(() => finished(retried.body.execution_id), 20_000)).status).toBe('success');
    const listed = await call('GET', `/workflows/${workflow.body.id}/executions`);
    expect(listed.body.executions.map((e: { execution_id: string }) => e.execution_id).sort()).toEqual(
      [first.body.execution_id, retried.body.execution_id].sort(),
    );
    // at least once: the step whose result met the lock ran again, with its same idempotency key
    console.log(`the held step was called ${service.held - 1} times for the run that met the lock`);
    expect(served.proc.exitCode, served.output()).toBeNull();
  });

  it('lets serve and a worker on the file ride out the lock: no live lease ended, every run finished', {
    timeout: 120_000,
  }, async () => {
    // steps that take 3 s: leases are held all through the lock
    const slow = createServer((_req, res) =>
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 3000),
    );
    service = { server: slow, url: Promise.resolve(''), held: 0, release: () => {} };
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const database = createSqlitePath();
    const env = { RUNLEDGER_POLL_MS: '100', RUNLEDGER_HTTP_ALLOW: '127.0.0.1' };
    const served = await serve(database, [], env);
    processes.push(served);
    const worker = node(['bin/runledger.js', 'worker', '--database', database], env);
    processes.push(worker);
    await eventually(() => /worker \d+: stored workflows/.test(worker.output()), 20_000);
    const post = (path: string, body: unknown) =>
      fetch(`${served.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((r) => r.json());
    const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/slow`;
    const workflow = await post('/workflows', {
      name: 'slow',
      steps: [{ id: 'call', type: 'http_request', config: { url, timeout_seconds: 30 } }],
    });
    const ids: string[] = [];
    for (let n = 0; n < 20; n++)
      ids.push((await post(`/workflows/${workflow.id}/execute`, { trigger_data: { n } })).execution_id);
    await sleep(1000);
    const holder = node(['-e', HOLDER, database, String(LOCK_MS)]);
    processes.push(holder);
    await eventually(() => holder.output().includes('released'), LOCK_MS + 10_000);
    for (const id of ids) {
      const record = await eventually(async () => {
        const r = await fetch(`${served.url}/workflows/${workflow.id}/executions/${id}`).then((r) => r.json());
        return r.status === 'success' || r.status === 'failed' ? r : undefined;
      }, 30_000);
      expect(record.status).toBe('success');
    }
    // nobody could beat while the lock was held: neither process took the other for dead for it
    const db = new Database(database, { readonly: true });
    const expired = db.prepare("SELECT count(*) AS n FROM events WHERE type = 'task.lease_expired'").get() as {
      n: number;
    };
    db.close();
    expect(expired.n).toBe(0);
    expect(served.proc.exitCode, served.output()).toBeNull();
    expect(worker.proc.exitCode, worker.output()).toBeNull();
  });

  // Serve and a worker on one file (a supported setup) take turns on its write lock all the time:
  // none of that ordinary contention may reach a caller as a 503.
  it('answers no 503 while serve and a worker process share the file under load', { timeout: 120_000 }, async () => {
    const database = createSqlitePath();
    const served = await serve(database, [], { RUNLEDGER_POLL_MS: '100' });
    processes.push(served);
    const worker = node(['bin/runledger.js', 'worker', '--database', database], { RUNLEDGER_POLL_MS: '100' });
    processes.push(worker);
    await eventually(() => /worker \d+: stored workflows/.test(worker.output()), 20_000);
    const post = async (path: string, body: unknown) => {
      const started = performance.now();
      const response = await fetch(`${served.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: await response.json(), ms: performance.now() - started };
    };
    const steps = Array.from({ length: 5 }, (_, i) => ({
      id: `s${i}`,
      type: 'transform',
      config: { mapping: { n: '{{trigger.n}}', i } },
    }));
    const workflow = (await post('/workflows', { name: 'shared-file', steps })).body;
    const answers: Array<{ status: number; body: { execution_id: string }; ms: number }> = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 20 }, async (_, lane) => {
        for (let n = lane; n < 400; n += 20)
          answers.push(await post(`/workflows/${workflow.id}/execute`, { trigger_data: { n } }));
      }),
    );
    const statuses = new Map<number, number>();
    for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    console.log(
      `400 executions posted in ${(performance.now() - started).toFixed(0)} ms, slowest answer ${Math.max(...answers.map((a) => a.ms)).toFixed(0)} ms; statuses ${JSON.stringify([...statuses])}`,
    );
    expect(answers.filter((a) => a.status !== 202)).toEqual([]);
    const ids = new Set(answers.map((a) => a.body.execution_id));
    const list = async () => {
      const all: Array<{ execution_id: string; status: string }> = [];
      for (let key: string | null = null; ; ) {
        const page: { executions: typeof all; last_key: string | null } = await fetch(
          `${served.url}/workflows/${workflow.id}/executions?limit=100${key ? `&last_key=${key}` : ''}`,
        ).then((r) => r.json());
        all.push(...page.executions);
        key = page.last_key;
        if (!key) return all;
      }
    };
    const done = await eventually(async () => {
      const all = await list();
      return all.filter((e) => e.status !== 'pending' && e.status !== 'running').length === ids.size ? all : undefined;
    }, 60_000);
    expect(done.map((e) => e.status)).toEqual(done.map(() => 'success'));
    expect(new Set(done.map((e) => e.execution_id))).toEqual(ids);
    // both processes ran some: the file was shared for real
    expect(worker.output()).toContain('"msg":"run:end"');
    expect(served.output()).toContain('"msg":"run:end"');
    expect(worker.output()).not.toMatch(/store_unavailable/);
    expect(served.output()).not.toMatch(/store_unavailable/);
  });
});
