import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { serve, type Served } from './child.js';
import { expectedSideEffects, type PythonFunction, pythonFunction, sideEffectLines } from './python-function.js';

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the server's JSON, asserted field by field
  body: any;
}

async function call(method: string, url: string, body?: unknown): Promise<Answer> {
  const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const RUNS = 5;
/** The example's durable sleep in the kill tests: time to see every run in it, and kill, before one is due. */
const KILL_SLEEP = '6s';

// The Python durable function of examples/python/function.py (step, durable sleep, step) run by a real
// `runledger serve` over HTTP: five runs, then kill -9 of either side while every run is in its sleep
// (the first step journaled, the timer set, no call in flight), so each step must have run exactly once.
describe.each(backends)('the Python onboard function against runledger serve on $name', (backend) => {
  const procs: ChildProcess[] = [];
  afterEach(() => {
    for (const p of procs.splice(0)) p.kill('SIGKILL');
  });

  /** A database, the function listening, a server on the database with the function registered. */
  const start = async (sleep: string) => {
    const fn = await pythonFunction(sleep);
    const python = await fn.start();
    procs.push(python);
    const database = await backend.create();
    // the default lease: no kill lands while one is held (every run sleeps), and a short one (1.5 s) expired
    // under a live pass on a loaded machine, so its step ran again, rightly (at least once), but not the point here
    const env = {
      RUNLEDGER_HTTP_ALLOW: '127.0.0.1',
      RUNLEDGER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rl-pyfn-serve-')),
      RUNLEDGER_POLL_MS: '100',
    };
    const server = await serve(database, [], env);
    procs.push(server.proc);
    const registered = await call('POST', `${server.url}/functions`, {
      name: 'onboard',
      url: `http://127.0.0.1:${fn.port}/`,
      secret: fn.secret,
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    expect(registered.body).toMatchObject({ name: 'onboard', version: '1' });
    expect(registered.body).not.toHaveProperty('secret'); // given, not generated: never echoed
    return { fn, python, database, env, server };
  };

  /** Starts RUNS runs of onboard at once; their ids → the email each was given. */
  const startRuns = async (server: Served): Promise<Map<string, string>> => {
    const emails = Array.from({ length: RUNS }, (_, i) => `user${i + 1}@example.com`);
    const started = await Promise.all(
      emails.map((email) => call('POST', `${server.url}/functions/onboard/runs`, { input: { email } })),
    );
    const runs = new Map<string, string>();
    started.forEach(({ status, body }, i) => {
      expect(status, JSON.stringify(body)).toBe(202);
      expect(body).toMatchObject({ function: 'onboard', version: '1' });
      runs.set(body.run_id, emails[i]!);
    });
    return runs;
  };

  /** Every run's view, a tenth of a second from now: polled no faster, five views load a busy server less. */
  const views = async (server: Served, runs: Map<string, string>) => {
    await new Promise((done) => setTimeout(done, 100));
    return Promise.all([...runs.keys()].map(async (id) => (await call('GET', `${server.url}/runs/${id}`)).body));
  };

  /**
   * Resolves once every run is in its durable sleep: its first step journaled, its timer set, no call in flight.
   * A kill must land a clear second before the first timer is due, or a run's next call could be in flight.
   * Resolves with when the last timer is due (ms since the epoch).
   */
  const allSleeping = async (server: Served, runs: Map<string, string>) => {
    await eventually(async () => (await views(server, runs)).every((v) => v.status === 'sleeping'), 20_000);
    const due = await Promise.all(
      [...runs.keys()].map(async (id) => {
        const { body } = await call('GET', `${server.url}/runs/${id}/events?types=sleep.started`);
        return body.events[0].data.until as number;
      }),
    );
    const left = Math.min(...due) - Date.now();
    if (left < 1000) throw new Error(`the first timer is due in ${left} ms: too soon to kill at a known point`);
    return Math.max(...due);
  };

  /** Every run's view once all have ended; each must have succeeded with onboard's output, each step run once. */
  const expectAllSucceeded = async (server: Served, runs: Map<string, string>, logs: () => string) => {
    const ended = await eventually(async () => {
      const all = await views(server, runs);
      return all.every((v) => ['success', 'failed', 'cancelled'].includes(v.status)) ? all : undefined;
    }, 60_000).catch((error) => {
      throw new Error(`${error}\n${logs()}`);
    });
    for (const view of ended) {
      expect(view, logs()).toMatchObject({
        status: 'success',
        workflow: 'onboard', // a run of a function is shown under its name
        output: { account: `acct-${view.id}`, welcomed: true },
      });
      const steps = view.steps.map((s: { name: string; status: string; attempts: number }) => [
        s.name,
        s.status,
        s.attempts,
      ]);
      expect(steps, logs()).toEqual([
        ['create-account', 'success', 1],
        ['send-welcome', 'success', 1],
      ]);
    }
  };

  const logsOf = (fn: PythonFunction, server: () => Served) => () =>
    `--- function ---\n${fn.output()}\n--- server ---\n${server().output()}`;

  it('runs five runs of the function registered over HTTP; each step ran once', { timeout: 60_000 }, async () => {
    const { fn, server } = await start('1s');
    const logs = logsOf(fn, () => server);
    const runs = await startRuns(server);
    await expectAllSucceeded(server, runs, logs);
    expect(sideEffectLines(fn.sideEffects), logs()).toEqual(expectedSideEffects(runs));
  });

  it('kill -9 of the function in the sleep: found down, called again once back; no step twice', {
    timeout: 90_000,
  }, async () => {
    const { fn, python, server } = await start(KILL_SLEEP);
    const logs = logsOf(fn, () => server);
    const runs = await startRuns(server);
    await allSleeping(server, runs);
    expect(sideEffectLines(fn.sideEffects)).toEqual(
      [...runs].map(([id, email]) => `${id}:create-account create account ${email}`).sort(),
    );

    const died = new Promise((done) => python.on('exit', (_code, signal) => done(signal)));
    python.kill('SIGKILL');
    expect(await died).toBe('SIGKILL');
    // each run's timer fires and its call is refused: one run task per run retried on ECONNREFUSED
    await eventually(() => refusedTasks(server.output()).size >= RUNS, 20_000).catch((error) => {
      throw new Error(`${error}\n${logs()}`);
    });

    procs.push(await fn.start()); // the same port, the same side-effects file
    await expectAllSucceeded(server, runs, logs);
    expect(sideEffectLines(fn.sideEffects), logs()).toEqual(expectedSideEffects(runs));
  });

  it('kill -9 of serve in the sleep, down till the timers are due: restarted, all succeed, no step twice', {
    timeout: 90_000,
  }, async () => {
    const { fn, database, env, server: first } = await start(KILL_SLEEP);
    let server = first;
    const logs = logsOf(fn, () => server);
    const runs = await startRuns(first);
    const lastDue = await allSleeping(first, runs);

    first.proc.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    // the timers fall due while no server runs: the restart finds them due, not pending
    await new Promise((done) => setTimeout(done, Math.max(0, lastDue + 100 - Date.now())));
    server = await serve(database, [], env);
    procs.push(server.proc);
    await expectAllSucceeded(server, runs, logs);
    expect(sideEffectLines(fn.sideEffects), logs()).toEqual(expectedSideEffects(runs));
  });
});

/** The run tasks the server logged a retry of because the function's endpoint refused the connection. */
function refusedTasks(output: string): Set<string> {
  const tasks = new Set<string>();
  for (const line of output.split('\n').slice(0, -1)) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: string; queue?: string; task_id?: string; error?: string };
    if (entry.msg === 'task:retry' && entry.queue === 'runledger.runs' && entry.error?.includes('ECONNREFUSED'))
      tasks.add(entry.task_id!);
  }
  return tasks;
}
