import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { runCli as run, serve, type Served } from './child.js';

/* `runledger start`: one verb for stored and code workflows, one flag (--input), the old forms with a hint, a short summary after --wait. */

// the server's database holds what start resolves (stored workflows) and what executions show reads: both backends
describe.each(backends)('runledger start on $name', (backend) => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-start-e2e-'));
  let server: Served;
  let target: Server;
  let refuse = true;
  let wid: string;
  let fanId: string;
  const at = (...args: string[]) => run([...args, '--url', server.url]);

  beforeAll(async () => {
    // the `right` branch of `fan` calls this: 400 (failed for good) until it is told otherwise
    target = createServer((_q, s) =>
      refuse
        ? s.writeHead(400).end('{"error":"no"}')
        : s.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'),
    );
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    const module = join(dir, 'workflows.mjs');
    writeFileSync(
      module,
      `import { workflow } from '${resolve('dist/index.js')}';
export const approval = workflow('approval', async (ctx, input) => ({ user: input.user, ok: (await ctx.waitForEvent('decision')).ok }));
export const report = workflow('report', async (ctx, input) => ctx.step('write', async () => ({ text: 'x'.repeat(input.size) })));`,
    );
    server = await serve(await backend.create(), ['--workflows', module], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
    const apply = async (definition: unknown) => {
      const file = join(dir, `${(definition as { name: string }).name}.json`);
      writeFileSync(file, JSON.stringify(definition));
      return /created (wf_\w+)/.exec((await at('workflows', 'apply', file)).stdout)![1]!;
    };
    wid = await apply({
      name: 'echo-flow',
      steps: [{ id: 'shape', type: 'transform', config: { mapping: { text: '{{trigger.text}}' } } }],
    });
    const url = `http://127.0.0.1:${(target.address() as { port: number }).port}/`;
    const right = [{ id: 'call', type: 'http_request', config: { url } }];
    fanId = await apply({
      name: 'fan',
      steps: [
        { id: 'first', type: 'transform', config: { mapping: { n: 1 } } },
        {
          id: 'both',
          type: 'parallel',
          config: {
            branches: { left: [{ id: 'left_step', type: 'transform', config: { mapping: { ok: true } } }], right },
          },
        },
      ],
    });
  }, 60_000);
  afterAll(async () => {
    server.proc.kill('SIGTERM');
    await server.exited;
    target.close();
  });

  it('starts a stored workflow by name or id and a code workflow by name; a name that is neither lists both kinds', {
    timeout: 60_000,
  }, async () => {
    const stored = await at('start', 'echo-flow', '--input', '{"text":"hi"}', '--wait');
    expect(stored, stored.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(stored.stdout).toMatch(
      /^execution (ex_\w+) (pending|running)\n {2}shape: success \d+ ms\nexecution \1 success in \d+ ms\n {2}shape {2}ok {2}\d+ ms\noutput: \{"shape":\{"text":"hi"\}\}\n$/,
    );
    const byId = await at('start', wid);
    expect(byId.stdout).toMatch(
      new RegExp(
        `^execution (ex_\\w+) (pending|running)\\nfollow it: {2}runledger events \\1 --url ${server.url} --follow\\n$`,
      ),
    );
    const code = await at('start', 'report', '--input', '{"size":3}', '--wait');
    expect(code, code.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(code.stdout).toMatch(/\nrun (run_\w+) success → \{"text":"xxx"\}\n$/);
    expect(await at('start', 'nope')).toMatchObject({
      code: 1,
      stderr:
        "<workflow>: no workflow is named 'nope': stored workflows: echo-flow, fan; code workflows: approval, report\n",
    });
    expect((await at('start', 'echo-flow', '--id', 'mine')).stderr).toMatch(
      /^--id: a stored workflow's execution is named by the server/,
    );
    expect((await at('start', 'echo-flow', '--input', '[1]')).stderr).toMatch(
      /^--input: a stored workflow's input \(its trigger data\) must be a JSON object/,
    );
  });

  it('executions show|rerun|cancel take an execution id alone; the old two-id form still works', {
    timeout: 60_000,
  }, async () => {
    const eid = /execution (ex_\w+) success/.exec(
      (await at('start', 'echo-flow', '--input', '{"text":"a"}', '--wait')).stdout,
    )![1]!;
    const alone = await at('executions', 'show', eid);
    expect(alone).toMatchObject({ code: 0, stderr: '' });
    expect(alone.stdout).toMatch(
      new RegExp(
        `^${eid} {2}success {2}version 1 {2}manual {2}\\{"text":"a"\\}\\nSTEP +TYPE +STATUS +ATTEMPTS +MS +ERROR\\nshape +transform +success +1 +\\d+\\noutput: \\{"shape":\\{"text":"a"\\}\\}\\n$`,
      ),
    );
    expect((await at('executions', 'show', wid, eid)).stdout).toBe(alone.stdout);
    expect(JSON.parse((await at('executions', 'show', eid, '--json')).stdout)).toMatchObject({
      execution_id: eid,
      workflow_id: wid,
      output: { shape: { text: 'a' } },
    });
    const rerun = await at('executions', 'rerun', eid, '--input', '{"text":"b"}', '--wait');
    expect(rerun.stdout).toMatch(/output: \{"shape":\{"text":"b"\}\}\n$/);
    expect((await at('executions', 'cancel', eid)).stderr).toMatch(/409/);
    const codeRun = /run (run_\w+) success/.exec(
      (await at('start', 'report', '--input', '{"size":1}', '--wait')).stdout,
    )![1]!;
    expect((await at('executions', 'show', codeRun)).stderr).toBe(
      `<execution-id>: ${codeRun} is a run of report, not an execution of a stored workflow (runledger runs show ${codeRun})\n`,
    );
    expect((await at('executions', 'show', 'ex_nope')).stderr).toMatch(/^<execution-id>: no execution ex_nope/);
  });

  it('the old verbs and flag names keep working, each with one hint line on stderr', { timeout: 60_000 }, async () => {
    const old = await at('run', 'echo-flow', '--data', '{"text":"old"}');
    expect(old).toMatchObject({
      code: 0,
      stderr: 'hint: use runledger start\nhint: --data is now --input\n',
      stdout: expect.stringMatching(/^execution ex_\w+ (pending|running)\n/),
    });
    const started = await at(
      'runs',
      'start',
      'approval',
      '--input',
      '{"user":"ada"}',
      '--id',
      `old-ada-${backend.name}`,
    );
    expect(started).toMatchObject({
      code: 0,
      stderr: 'hint: use runledger start\n',
      stdout: expect.stringMatching(/^run old-ada-\w+ started\n/),
    });
    await eventually(async () => /\bwaiting\b/.test((await at('runs', 'show', `old-ada-${backend.name}`)).stdout));
    const signalled = await at('runs', 'signal', `old-ada-${backend.name}`, 'decision', '--payload', '{"ok":true}');
    expect(signalled).toMatchObject({
      code: 0,
      stderr: 'hint: --payload is now --input\n',
      stdout: `signal 'decision' sent to old-ada-${backend.name}\n`,
    });
    const followed = await at('events', `old-ada-${backend.name}`, '--follow');
    // PostgreSQL's jsonb orders the keys its own way
    expect(followed.stdout).toMatch(/run old-ada-\w+ success → \{("user":"ada","ok":true|"ok":true,"user":"ada")\}\n$/);

    await at('start', 'approval', '--input', '{"user":"bo"}', '--id', `new-bo-${backend.name}`);
    await eventually(async () => /\bwaiting\b/.test((await at('runs', 'show', `new-bo-${backend.name}`)).stdout));
    expect(await at('runs', 'signal', `new-bo-${backend.name}`, 'decision', '--input', '{"ok":false}')).toMatchObject({
      code: 0,
      stderr: '',
    });
    const eid = /execution (ex_\w+)/.exec(old.stdout)![1]!;
    const rerun = await at('executions', 'rerun', wid, eid, '--data', '{"text":"again"}');
    expect(rerun).toMatchObject({
      code: 0,
      stderr: 'hint: --data is now --input\n',
      stdout: expect.stringMatching(new RegExp(`^execution ex_\\w+ reruns ${eid}\\n$`)),
    });
    const help = (await run(['--help'])).stdout;
    expect(help).toMatch(/\n {2}start \[options\] <workflow> /);
    expect(help).not.toMatch(/\n {2}run /);
  });

  it('--wait ends with a line per step and where a long output is; --json and --output give it whole', {
    timeout: 60_000,
  }, async () => {
    const text = 'x'.repeat(8_300);
    const waited = await at('start', 'echo-flow', '--input', JSON.stringify({ text }), '--wait');
    expect(waited.code).toBe(0);
    expect(waited.stdout.length).toBeLessThan(600);
    const eid = /execution (ex_\w+) success/.exec(waited.stdout)![1]!;
    expect(waited.stdout).toMatch(
      new RegExp(
        `\\n {2}shape {2}ok {2}\\d+ ms\\noutput: 8\\.1 KB — runledger executions show ${eid} --url ${server.url} --json, or --output out\\.json\\n$`,
      ),
    );
    const asJson = JSON.parse(
      (await at('start', 'echo-flow', '--input', JSON.stringify({ text }), '--wait', '--json')).stdout,
    );
    expect(asJson).toMatchObject({ status: 'success', output: { shape: { text } } });
    const file = join(dir, `out-${backend.name}.json`);
    const written = await at('start', 'echo-flow', '--input', JSON.stringify({ text }), '--wait', '--output', file);
    expect(written.stdout).toMatch(new RegExp(`\\noutput: 8\\.1 KB written to ${file.replace(/[.]/g, '\\.')}\\n$`));
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ shape: { text } });
    const shown = join(dir, `shown-${backend.name}.json`);
    await at('executions', 'show', eid, '--output', shown);
    expect(JSON.parse(readFileSync(shown, 'utf8'))).toEqual({ shape: { text } });

    const code = await at('start', 'report', '--input', '{"size":9000}', '--wait');
    const rid = /run (run_\w+) success\n/.exec(code.stdout)![1]!;
    expect(code.stdout).toMatch(
      new RegExp(
        `\\noutput: 8\\.8 KB — runledger runs show ${rid} --url ${server.url} --json, or --output out\\.json\\n$`,
      ),
    );
  });

  it('a retry says "reused" for what it took from the failed execution, live, in its summary and in executions show', {
    timeout: 60_000,
  }, async () => {
    refuse = true;
    const failed = await at('start', 'fan', '--wait');
    expect(failed.code).toBe(1);
    const eid = /execution (ex_\w+) partial_success/.exec(failed.stdout)![1]!;
    expect(failed.stdout).toMatch(/\n {2}first {8}ok {6}\d+ ms\n {2}both {9}failed/);
    expect(failed.stdout).toMatch(/\n {4}call {7}failed +\d+ ms {2}— .*400/);
    refuse = false;
    const retried = await at('executions', 'retry', eid, '--wait');
    expect(retried.code, retried.stdout + retried.stderr).toBe(0);
    expect(retried.stdout).toMatch(/\n {2}first: reused\n/);
    expect(retried.stdout).toMatch(/\n {2}call: success \d+ ms\n/);
    expect(retried.stdout).toMatch(
      /\n {2}first {8}reused\n {2}both {9}ok {6}\d+ ms\n {4}left_step {2}reused\n {4}call {7}ok {6}\d+ ms\n/,
    );
    const rid = /execution (ex_\w+) success/.exec(retried.stdout)![1]!;
    const shown = (await at('executions', 'show', rid)).stdout;
    expect(shown).toMatch(/\nfirst +transform +reused +1 *\n/);
    expect(shown).toMatch(/\ncall +http_request +success +1 +\d+\n/);
    expect((await at('runs', 'show', rid)).stdout).toMatch(/\nfirst +reused +1 *\n/);
    const listed = (await at('executions', 'list', 'fan')).stdout;
    expect(listed.split('\n')[1]).toMatch(new RegExp(`^${rid} +success`));
    expect((await at('executions', 'list', fanId)).stdout).toBe(listed);
  });
});
