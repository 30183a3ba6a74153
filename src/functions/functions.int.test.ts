import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import type { Engine } from '../engine.js';
import { TerminalError } from '../errors.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import type { Functions } from './functions.js';

type Memo = { data?: unknown; error?: { name: string; message: string } };
interface Call {
  function: string;
  version: string;
  run_id: string;
  input: any;
  steps: Record<string, Memo>;
  step?: { id: string; attempt: number };
}
interface Step {
  run<T>(id: string, fn: (ctx: { attempt: number; key: string }) => T | Promise<T>): Promise<T>;
  sleep(id: string, duration: number | string): Promise<void>;
  wait(id: string, timeout?: number | string): Promise<unknown>;
  invoke(id: string, fn: string, input?: unknown): Promise<unknown>;
}
type Handler = (input: any, step: Step) => Promise<unknown>;
/** A raw answer that stands in for the handler's: [status, body]. */
type Fault = (call: Call) => [number, string | object] | undefined;

/**
 * A function endpoint with the Python SDK's memo semantics: it verifies the signature, runs the handler from the top,
 * each recorded call returns its memo (an error raises it), and the first new call ends the call with its command.
 */
async function endpoint(secret: string, handler: Handler) {
  const calls: Call[] = [];
  const state = { calls, refused: 0, fault: undefined as Fault | undefined, delayMs: (_call: Call) => 0 };
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', async () => {
      const answer = (status: number, body: string | object) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(req.headers['runledger-signature'])) ?? [];
      const mac = createHmac('sha256', secret).update(`${t}.${text}`).digest();
      if (!v1 || !timingSafeEqual(mac, Buffer.from(v1, 'hex')) || Math.abs(Date.now() / 1000 - Number(t)) > 300) {
        state.refused += 1;
        return answer(401, { error: 'bad signature' });
      }
      const call = JSON.parse(text) as Call;
      calls.push(call);
      await new Promise((resolve) => setTimeout(resolve, state.delayMs(call)));
      const fault = state.fault?.(call);
      if (fault) return typeof fault[1] === 'string' ? res.writeHead(fault[0]).end(fault[1]) : answer(...fault);
      answer(200, await run(handler, call));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/fn`;
  return Object.assign(state, { url, close: () => new Promise((resolve) => server.close(resolve)) });
}

async function run(handler: Handler, call: Call): Promise<object> {
  let command: object | undefined;
  // a handler that caught the stop and went on still ends with the command it reached
  const stop = (c?: object): never => {
    command ??= c;
    throw new Error('stop');
  };
  const recorded = (id: string) => {
    const memo = call.steps[id]!;
    if (memo.error) throw Object.assign(new Error(memo.error.message), { name: memo.error.name });
    return memo.data;
  };
  const step: Step = {
    run: async (id, fn) => {
      if (command) stop();
      if (Object.hasOwn(call.steps, id)) return recorded(id) as never;
      const attempt = call.step?.id === id ? call.step.attempt : 1;
      let data: unknown;
      try {
        data = await fn({ attempt, key: `${call.run_id}:${id}` });
      } catch (e) {
        const error = { name: (e as Error).name, message: (e as Error).message };
        return stop({ op: 'step', id, error, retryable: !(e instanceof TerminalError) });
      }
      return stop({ op: 'step', id, data });
    },
    sleep: async (id, duration) =>
      void (Object.hasOwn(call.steps, id) ? recorded(id) : stop({ op: 'sleep', id, duration })),
    wait: async (id, timeout) =>
      Object.hasOwn(call.steps, id) ? recorded(id) : stop({ op: 'wait_for_event', id, timeout }),
    invoke: async (id, fn, input) =>
      Object.hasOwn(call.steps, id) ? recorded(id) : stop({ op: 'child', id, function: fn, input }),
  };
  try {
    const data = await handler(call.input, step);
    return command ?? { op: 'finish', data };
  } catch (e) {
    return command ?? { op: 'fail', error: { name: (e as Error).name, message: (e as Error).message } };
  }
}

describe.each(backends)('durable functions on $name', (backend) => {
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function setup(allow = ['127.0.0.1']) {
    const t = await testEngine(backend, { pollMs: 100 });
    closers.push(t.close);
    const workflows = storedWorkflows(t.engine, { secretKey: randomBytes(32), allow });
    return { engine: t.engine, workflows, functions: workflows.functions };
  }

  /** Registers `handler` as function `name` behind an endpoint of its own. */
  async function serve(
    functions: Functions,
    name: string,
    handler: Handler,
    options: { version?: string; secret?: string; registered?: string } = {},
  ) {
    const secret = options.secret ?? randomBytes(16).toString('hex');
    const fn = await endpoint(secret, handler);
    closers.push(fn.close);
    const registration = { name, url: fn.url, secret: options.registered ?? secret, retries: 3, timeout: '5s' };
    await functions.registry.register({ ...registration, ...(options.version ? { version: options.version } : {}) });
    return fn;
  }

  const ended = (engine: Engine, id: string) => engine.runs.wait(id, { timeoutMs: 20_000, pollMs: 50 });
  const types = async (engine: Engine, id: string) => (await engine.journal.readStream(`run:${id}`)).map((e) => e.type);

  it('runs each step once across the calls, memoized, and finishes with the output', async () => {
    const { engine, functions } = await setup();
    const ran = { load: 0, charge: 0 };
    const fn = await serve(functions, 'onboard', async (input, step) => {
      const user = await step.run('load', () => {
        ran.load += 1;
        return { name: `user ${input.user}` };
      });
      const charged = await step.run('charge', ({ key }) => {
        ran.charge += 1;
        return { key, amount: 5 };
      });
      return { user, charged };
    });
    const { runId, function: name, version } = await functions.start('onboard', { user: 42 });
    expect({ name, version }).toEqual({ name: 'onboard', version: '1' });
    const view = await ended(engine, runId);
    expect(view).toMatchObject({
      status: 'success',
      workflow: 'runledger.function',
      output: { user: { name: 'user 42' }, charged: { key: `${runId}:charge`, amount: 5 } },
    });
    expect(view.steps.map((s) => [s.name, s.status, s.attempts])).toEqual([
      ['load', 'success', 1],
      ['charge', 'success', 1],
    ]);
    expect(ran).toEqual({ load: 1, charge: 1 });
    expect(fn.calls.map((c) => Object.keys(c.steps))).toEqual([[], ['load'], ['load', 'charge']]);
    expect(fn.calls.every((c) => c.run_id === runId && c.function === 'onboard' && c.input.user === 42)).toBe(true);
    expect((await types(engine, runId)).filter((t) => t.startsWith('step.'))).toEqual([
      'step.started',
      'step.completed',
      'step.started',
      'step.completed',
    ]);
  });

  it('keeps every version of racing registrations of one function (a deploy registering several at once)', async () => {
    const { functions } = await setup();
    const secret = randomBytes(16).toString('hex');
    const register = (version: string) =>
      functions.registry.register({ name: 'racy', url: 'http://127.0.0.1:9/fn', secret, version });
    await register('v0');
    const versions = ['v1', 'v2', 'v3', 'v4', 'v5', 'v6', 'v7', 'v8'];
    await Promise.all(versions.map(register));
    const info = await functions.registry.info('racy');
    expect(info.versions.map((v) => v.version).sort()).toEqual(['v0', ...versions]);
  });

  it('takes step ids that are names of Object.prototype (constructor, __proto__) like any other', async () => {
    const { engine, functions } = await setup();
    await serve(functions, 'protos', async (_input, step) => {
      const a = await step.run('constructor', () => 'a');
      const b = await step.run('__proto__', () => 'b');
      const c = await step.run('toString', () => 'c');
      return [a, b, c];
    });
    const { runId } = await functions.start('protos', {});
    expect(await ended(engine, runId)).toMatchObject({ status: 'success', output: ['a', 'b', 'c'] });
  });

  it('retries a step that raised (attempt 2 sees attempt 2), and records a TerminalError at once for the handler to catch', async () => {
    const { engine, functions } = await setup();
    const attempts: number[] = [];
    let charges = 0;
    const fn = await serve(functions, 'pay', async (_input, step) => {
      const flaky = await step.run('flaky', ({ attempt }) => {
        attempts.push(attempt);
        if (attempt < 2) throw new Error('not yet');
        return `ok on ${attempt}`;
      });
      try {
        await step.run('charge', () => {
          charges += 1;
          throw Object.assign(new TerminalError('insufficient funds'), { name: 'CardDeclined' });
        });
        return { flaky, charged: true };
      } catch (e) {
        // a new pass after the sleep: the failure comes back from the journal as it was
        await step.sleep('pause', 50);
        return { flaky, caught: { name: (e as Error).name, message: (e as Error).message } };
      }
    });
    const { runId } = await functions.start('pay', null);
    const view = await ended(engine, runId);
    expect(view).toMatchObject({
      status: 'success',
      output: { flaky: 'ok on 2', caught: { name: 'CardDeclined', message: 'insufficient funds' } },
    });
    expect(attempts).toEqual([1, 2]);
    expect(charges).toBe(1);
    expect(view.steps.map((s) => [s.name, s.status, s.attempts])).toEqual([
      ['flaky', 'success', 2],
      ['charge', 'failed', 1],
    ]);
    expect(fn.calls.at(-1)!.steps).toEqual({
      flaky: { data: 'ok on 2' },
      charge: { error: { name: 'CardDeclined', message: 'insufficient funds' } },
      pause: { data: null },
    });
  });

  it('calls again after a 503 to a new call, and counts a 503 during a retry as one of the attempts', async () => {
    const { engine, functions } = await setup();
    const attempts: number[] = [];
    const fn = await serve(functions, 'flaky', async (_input, step) =>
      step.run('work', ({ attempt }) => {
        attempts.push(attempt);
        if (attempt === 1) throw new Error('first try fails');
        return attempt;
      }),
    );
    let downs = 0;
    fn.fault = (call) => {
      const down = (call.steps.work === undefined && !call.step && downs < 2) || call.step?.attempt === 2;
      if (down) downs += 1;
      return down ? [503, 'down for a moment'] : undefined;
    };
    const { runId } = await functions.start('flaky', null);
    const view = await ended(engine, runId);
    expect(view).toMatchObject({ status: 'success', output: 3 });
    expect(attempts).toEqual([1, 3]);
    expect(view.steps.map((s) => [s.name, s.status, s.attempts])).toEqual([['work', 'success', 3]]);
    expect(fn.calls.map((c) => c.step?.attempt ?? 1)).toEqual([1, 1, 1, 2, 3, 1]);
  });

  it('fails the run on a 401, naming the status, and calls no more', async () => {
    const { engine, functions } = await setup();
    const fn = await serve(functions, 'locked', async () => 'never', { registered: 'another secret, 16+' });
    const { runId } = await functions.start('locked', null);
    const view = await ended(engine, runId);
    expect(view.status).toBe('failed');
    expect(view.error).toMatch(/function 'locked' .*answered 401/);
    expect(fn.refused).toBe(1);
    expect(fn.calls).toEqual([]);
  });

  it.each([
    ['not JSON', 'this is not JSON', /command: must be a JSON object/],
    ['an unknown op', { op: 'jump' }, /command\.op: must be one of step, sleep, wait_for_event, child, finish, fail/],
    ['a bad duration', { op: 'sleep', id: 'nap', duration: 'soon' }, /command\.duration: must be a duration/],
    ['a step without data', { op: 'step', id: 'a' }, /command\.data: is required/],
    ['an id too long', { op: 'step', id: 'x'.repeat(129), data: 1 }, /command\.id: must be 1–128 characters/],
  ])('fails the run on %s, naming the field', async (_what, body, message) => {
    const { engine, functions } = await setup();
    const fn = await serve(functions, 'garbled', async () => 'never');
    fn.fault = () => [200, body];
    const { runId } = await functions.start('garbled', null);
    const view = await ended(engine, runId);
    expect(view.status).toBe('failed');
    expect(view.error).toMatch(message);
    expect(fn.calls).toHaveLength(1);
  });

  it('fails the run when a retried step comes back as another call, naming both', async () => {
    const { engine, functions } = await setup();
    const fn = await serve(functions, 'fickle', async (_input, step) =>
      step.run('charge', () => {
        throw new Error('try again');
      }),
    );
    fn.fault = (call) => (call.step ? [200, { op: 'step', id: 'refund', data: 1 }] : undefined);
    const { runId } = await functions.start('fickle', null);
    const view = await ended(engine, runId);
    expect(view.status).toBe('failed');
    expect(view.error).toContain(
      `NonDeterminismError: run ${runId}: the journal has step 'charge' at call 1; the function's next call is step 'refund'`,
    );
  });

  it('fails the run when a call repeats an id an earlier call used, naming it', async () => {
    const { engine, functions } = await setup();
    const fn = await serve(functions, 'again', async (_input, step) => step.run('a', () => 1));
    fn.fault = (call) => ('a' in call.steps ? [200, { op: 'sleep', id: 'a', duration: 10 }] : undefined);
    const { runId } = await functions.start('again', null);
    const view = await ended(engine, runId);
    expect(view.status).toBe('failed');
    expect(view.error).toContain(`the function's call 2 is sleep 'a', an id its earlier calls used`);
  });

  it('fails the run when a retried step answers a refusal or a bad command, rather than hand it to the handler', async () => {
    const { engine, functions } = await setup();
    const fn = await serve(functions, 'careless', async (_input, step) => {
      try {
        return await step.run('flaky', () => {
          throw new Error('again');
        });
      } catch {
        return 'swallowed';
      }
    });
    fn.fault = (call) => (call.step ? [200, { op: 'dance' }] : undefined);
    const { runId } = await functions.start('careless', null);
    const view = await ended(engine, runId);
    expect(view.status).toBe('failed');
    expect(view.error).toMatch(/command\.op: must be one of/);
  });

  it('sleeps, waits for a signal (and times out on another), and finishes', async () => {
    const { engine, functions } = await setup();
    const fn = await serve(functions, 'patient', async (_input, step) => {
      await step.sleep('nap', 200);
      const approval = await step.wait('approval', '1h');
      const nothing = await step.wait('never', 100);
      return { approval, nothing };
    });
    const { runId } = await functions.start('patient', null);
    await eventually(async () => (await types(engine, runId)).includes('wait.started'), 20_000);
    expect((await engine.run(runId)).status).toBe('waiting');
    await engine.signal(runId, 'approval', { ok: true });
    const view = await ended(engine, runId);
    expect(view).toMatchObject({ status: 'success', output: { approval: { ok: true }, nothing: null } });
    const kinds = (await types(engine, runId)).filter((t) => /^(sleep|wait)\./.test(t));
    expect(kinds).toEqual([
      'sleep.started',
      'sleep.completed',
      'wait.started',
      'wait.completed',
      'wait.started',
      'wait.timed_out',
    ]);
    expect(fn.calls.at(-1)!.steps).toEqual({
      nap: { data: null },
      approval: { data: { ok: true } },
      never: { data: null },
    });
  });

  it('runs a child function for its output, hands a failed child to the handler, and fails with fail', async () => {
    const { engine, functions } = await setup();
    await serve(functions, 'double', async (input) => input.n * 2);
    await serve(functions, 'broken', async () => {
      throw Object.assign(new Error('no luck'), { name: 'Broken' });
    });
    await serve(functions, 'parent', async (_input, step) => {
      const doubled = await step.invoke('kid', 'double', { n: 21 });
      try {
        await step.invoke('bad-kid', 'broken');
      } catch (e) {
        return { doubled, failed: (e as Error).name };
      }
      return { doubled };
    });
    const { runId } = await functions.start('parent', null);
    const view = await ended(engine, runId);
    expect(view).toMatchObject({ status: 'success', error: null, output: { doubled: 42, failed: 'Broken' } });
    expect(await engine.run(`${runId}:kid`)).toMatchObject({
      status: 'success',
      workflow: 'runledger.function',
      input: { function: 'double', version: '1', input: { n: 21 } },
      output: 42,
    });
    expect(await engine.run(`${runId}:bad-kid`)).toMatchObject({ status: 'failed', error: 'Broken: no luck' });
  });

  it('keeps a running run on the version it started on; a new run starts on the newest', async () => {
    const { engine, functions } = await setup();
    const secret = randomBytes(16).toString('hex');
    const v1 = await serve(
      functions,
      'deploy',
      async (_input, step) => {
        await step.wait('go');
        return step.run('where', () => 'v1');
      },
      { secret },
    );
    const first = await functions.start('deploy', null);
    await eventually(async () => (await types(engine, first.runId)).includes('wait.started'), 20_000);
    const v2 = await serve(functions, 'deploy', async (_input, step) => step.run('where', () => 'v2'), {
      secret,
      version: '2',
    });
    const second = await functions.start('deploy', null);
    expect([first.version, second.version]).toEqual(['1', '2']);
    expect(await ended(engine, second.runId)).toMatchObject({ status: 'success', output: 'v2' });
    await engine.signal(first.runId, 'go', null);
    expect(await ended(engine, first.runId)).toMatchObject({ status: 'success', output: 'v1' });
    expect(new Set(v1.calls.map((c) => `${c.run_id}@${c.version}`))).toEqual(new Set([`${first.runId}@1`]));
    expect(new Set(v2.calls.map((c) => `${c.run_id}@${c.version}`))).toEqual(new Set([`${second.runId}@2`]));
  });

  it('fails a run of a function deleted meanwhile at its next call, naming it', async () => {
    const { engine, functions } = await setup();
    await serve(functions, 'gone', async (_input, step) => step.wait('go'));
    const { runId } = await functions.start('gone', null);
    await eventually(async () => (await types(engine, runId)).includes('wait.started'), 20_000);
    await functions.registry.delete('gone');
    await engine.signal(runId, 'go', 1);
    const view = await ended(engine, runId);
    expect(view.status).toBe('failed');
    expect(view.error).toContain(`function 'gone' (version '1') is not registered`);
  });

  it('refuses a loopback endpoint that is not allowed, naming RUNLEDGER_HTTP_ALLOW, and sends nothing', async () => {
    const { engine, functions } = await setup([]);
    const fn = await serve(functions, 'inside', async () => 'reached');
    const { runId } = await functions.start('inside', null);
    const view = await ended(engine, runId);
    expect(view.status).toBe('failed');
    expect(view.error).toContain('RUNLEDGER_HTTP_ALLOW');
    expect(fn.calls).toEqual([]);
  });

  it('cancels a run that sleeps', async () => {
    const { engine, functions } = await setup();
    let after = 0;
    await serve(functions, 'sleepy', async (_input, step) => {
      await step.sleep('long', '1h');
      return step.run('after', () => ++after);
    });
    const { runId } = await functions.start('sleepy', null);
    await eventually(async () => (await types(engine, runId)).includes('sleep.started'), 20_000);
    await engine.cancel(runId);
    expect((await ended(engine, runId)).status).toBe('cancelled');
    expect(after).toBe(0);
  });

  it('gives a stored workflow the output of its function step', async () => {
    const { engine, workflows, functions } = await setup();
    await serve(functions, 'greet', async (input, step) => step.run('hello', () => `hello ${input.name}`));
    const wf = await workflows.definitions.create({
      name: 'greeting',
      steps: [{ id: 'greet', type: 'function', config: { function: 'greet', input: { name: 'Ada' } } }],
    });
    const { execution_id } = await workflows.executions.execute(wf.id);
    const done = await eventually(async () => {
      const record = await workflows.executions.get(wf.id, execution_id);
      return record.status === 'success' || record.status === 'failed' ? record : undefined;
    }, 20_000);
    expect(done.status).toBe('success');
    expect((await engine.run(execution_id)).output).toEqual({ greet: 'hello Ada' });
    expect(await engine.run(`${execution_id}:greet`)).toMatchObject({
      status: 'success',
      input: { function: 'greet', version: '1', input: { name: 'Ada' } },
      output: 'hello Ada',
    });
  });

  it('calls again after a call timed out, and takes the ids the SDK makes (numbered repeats, 128 characters)', async () => {
    const { engine, functions } = await setup();
    const long = 'x'.repeat(128);
    const fn = await serve(functions, 'slow', async (_input, step) => {
      const a = await step.run('fetch', () => 1);
      const b = await step.run('fetch:2', () => 2);
      const c = await step.run(long, () => 3);
      return [a, b, c];
    });
    await functions.registry.register({ name: 'slow', url: fn.url, timeout: '1s' });
    fn.delayMs = (call) => (fn.calls.length === 1 ? 3000 : 0);
    const { runId } = await functions.start('slow', null);
    const view = await ended(engine, runId);
    expect(view).toMatchObject({ status: 'success', error: null, output: [1, 2, 3] });
    expect(view.steps.map((s) => s.name)).toEqual(['fetch', 'fetch:2', long]);
    expect(fn.calls.map((c) => Object.keys(c.steps).length)).toEqual([0, 0, 1, 2, 3]);
  });
});
