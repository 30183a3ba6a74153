import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { cli, serve, type Served, freePort } from './child.js';

interface Answer {
  code: number;
  stdout: string;
  stderr: string;
}

/** `runledger …args` to its end, with its exit code and both outputs (never throws on a non-zero exit). */
function run(args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string): Promise<Answer> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [resolve('bin/runledger.js'), ...args],
      {
        encoding: 'utf8',
        env: { ...process.env, RUNLEDGER_URL: '', RUNLEDGER_DATABASE: '', ...env },
        ...(cwd ? { cwd } : {}),
      },
      (error, stdout, stderr) => done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('the CLI against a server, and against the database', () => {
  const dir = mkdtempSync(join(tmpdir(), 'runledger-cli-e2e-'));
  let database: string;
  let server: Served;
  const at = (...args: string[]) => run([...args, '--url', server.url]);

  beforeAll(async () => {
    const module = join(dir, 'workflows.mjs');
    writeFileSync(
      module,
      `import { workflow } from '${resolve('dist/index.js')}';
export const approval = workflow('approval', async (ctx, input) => {
  await ctx.step('ask', async () => input.user);
  const answer = await ctx.waitForEvent('decision');
  if (!answer.ok) throw new Error('refused by ' + input.user);
  return { user: input.user, ok: true };
});`,
    );
    database = await backends[0]!.create();
    server = await serve(database, ['--workflows', module, '--sample'], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
  }, 30_000);
  afterAll(async () => {
    server.proc.kill('SIGTERM');
    await server.exited;
  });

  it('prints its version, and a description on every command', async () => {
    const version = await run(['--version']);
    expect(version).toMatchObject({
      code: 0,
      stdout: `${JSON.parse((await import('node:fs')).readFileSync('package.json', 'utf8')).version}\n`,
    });
    const help = (await run(['--help'])).stdout;
    for (const line of help
      .split('Commands:')[1]!
      .trim()
      .split('\n')
      .filter((l) => /^ {2}\S/.test(l)))
      expect(line.trim().split(/\s{2,}/).length, line).toBeGreaterThan(1);
  });

  it('never creates a database on a read, names the flag of bad input, and says when the server is down', async () => {
    const typo = await run(['status', '--database', join(dir, 'typo.db')]);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(/--database: no database at .*typo\.db \(a read never creates one/);
    expect((await import('node:fs')).existsSync(join(dir, 'typo.db'))).toBe(false);
    expect((await run(['status', '-d', join(dir, 'typo.db')])).code).toBe(1);

    const down = `http://127.0.0.1:${await freePort()}`;
    const unreachable = await run(['runs', 'list', '--url', down]);
    expect(unreachable).toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`cannot reach ${down} (ECONNREFUSED) — is \`runledger serve\` running?`),
    });
    expect((await at('run', 'wf_x', '--data', '{nope')).stderr).toMatch(
      /^hint: use runledger start\nhint: --data is now --input\n--data: not JSON: /,
    );
    expect((await at('start', 'wf_x', '--input', '{nope')).stderr).toMatch(/^--input: not JSON: /);
    expect((await at('runs', 'list', '--limit', '0')).stderr).toMatch(/^--limit: must be a whole number from 1/);
    expect((await at('tasks', 'list', '--state', 'zombie')).stderr).toMatch(
      /^--state: must be one of ready, running, completed, dead/,
    );
    expect((await run(['serve', '--port', 'eighty', '--database', join(dir, 'never.db')])).stderr).toMatch(
      /^--port: must be a whole number from 0 to 65535/,
    );
  });

  it('reads the same over the API and from the database: status, runs (named by workflow), tasks, "no dead tasks"', async () => {
    const status = await at('status');
    expect(status.stdout).toMatch(
      /^sqlite .*, schema version \d+\n\d+ events in \d+ streams?, \d+ subscriptions?\ntasks: /,
    );
    const direct = await run(['status', '--database', database]);
    expect(direct.stdout.split('\n')[0]).toBe(status.stdout.split('\n')[0]);
    const json = JSON.parse((await at('status', '--json')).stdout);
    expect(json).toMatchObject({ dialect: 'sqlite', tasks: expect.any(Object) });

    const sample = /sample workflow (wf_\w+)/.exec(server.output())![1]!;
    const executed = await at('run', sample, '--data', '{"name":"ada"}', '--wait');
    expect(executed.code).toBe(0);
    // the sample's output (over 100 characters) is located, not printed: --json has it
    expect(executed.stdout).toMatch(
      /\nexecution (ex_\w+) success in \d+ ms\n {2}greet {4}ok {2}\d+ ms\n {2}profile {2}ok {2}\d+ ms\n {2}record {3}ok {2}\d+ ms\noutput: \d+ B — runledger executions show ex_\w+ --url http:\/\/127\.0\.0\.1:\d+ --json, or --output out\.json\n$/,
    );
    expect(
      JSON.parse((await at('start', sample, '--input', '{"name":"ada"}', '--wait', '--json')).stdout).output,
    ).toMatchObject({ greet: { greeting: 'Hello ADA!' } });
    const listed = (await at('runs', 'list')).stdout.split('\n');
    expect(listed[0]).toMatch(/^ID\s+STATUS\s+CREATED\s+WORKFLOW\s+ERROR$/);
    // serve --sample also starts a code run and its child run: the rows compared are the newest execution's
    const newest = (lines: string[]) => lines.find((l) => l.startsWith('ex_'));
    expect(newest(listed)).toMatch(/^ex_\w+\s+success\s+\S+\s+greet-and-log$/);
    expect(newest((await run(['runs', 'list', '--database', database])).stdout.split('\n'))).toBe(newest(listed));
    expect(newest((await at('runs', 'list', '--status', 'succeeded')).stdout.split('\n'))).toBe(newest(listed));
    expect((await at('dlq', 'list')).stdout).toBe('no dead tasks\n');
    expect((await run(['dlq', 'list', '--database', database])).stdout).toBe('no dead tasks\n');
    expect(JSON.parse((await at('dlq', 'list', '--json')).stdout)).toEqual([]);
    const event = JSON.parse((await at('trigger', '--source', 'shop', '--detail-type', 'order', '--json')).stdout);
    expect(event).toMatchObject({ id: expect.stringMatching(/^evt_/), routed: true, matches: [], duplicate: false });
  });

  it('applies a file once: the same file again makes no new version', async () => {
    const file = join(dir, 'flow.json');
    writeFileSync(
      file,
      JSON.stringify({ name: 'cli-flow', steps: [{ id: 'only', type: 'log', config: { message: 'hi' } }] }),
    );
    const created = await at('workflows', 'apply', file);
    expect(created.stdout).toMatch(
      /^created wf_\w+ 'cli-flow' version 1 \(1 step\)\nrun it: {2}runledger start cli-flow --url http:\/\/127\.0\.0\.1:\d+ --input '\{\}' --wait\n$/,
    );
    expect((await at('workflows', 'apply', file)).stdout).toMatch(/^unchanged wf_\w+ 'cli-flow' version 1 \(1 step\)/);
    writeFileSync(
      file,
      JSON.stringify({
        name: 'cli-flow',
        steps: [
          { id: 'a', type: 'log', config: { message: 'hi' } },
          { id: 'b', type: 'log', config: { message: 'there' } },
        ],
      }),
    );
    expect((await at('workflows', 'apply', file)).stdout).toMatch(/^updated wf_\w+ 'cli-flow' version 2 \(2 steps\)/);
    const byName = await at('run', 'cli-flow', '--wait');
    expect(byName.code, byName.stderr).toBe(0);
    expect(byName.stdout).toMatch(
      /execution ex_\w+ success in \d+ ms\n {2}a {2}ok {2}\d+ ms\n {2}b {2}ok {2}\d+ ms\noutput: \{"a":/,
    );
    expect((await at('run', 'no-such-flow')).stderr).toMatch(
      /^hint: use runledger start\n<workflow>: no stored workflow is named 'no-such-flow'/,
    );
  });

  // 16 CLI processes one after another, each a Node start-up: 25 s at a load of 7 (CI's 30 s default is too close)
  it('starts, signals and cancels code runs; events --follow exits 0 on success and 1 on failure', {
    timeout: 90_000,
  }, async () => {
    const started = await at('runs', 'start', 'approval', '--input', '{"user":"ada"}', '--id', 'cli-ada');
    expect(started).toMatchObject({
      code: 0,
      stdout: `run cli-ada started\nfollow it:  runledger events cli-ada --url ${server.url} --follow\n`,
    });
    expect((await at('runs', 'start', 'approval', '--id', 'cli-ada')).stdout).toMatch(
      /^run cli-ada exists \((pending|running|waiting)\): nothing new started/,
    );
    await eventually(async () => /\bwaiting\b/.test((await at('runs', 'show', 'cli-ada')).stdout));
    const following = run(['events', 'cli-ada', '--follow', '--url', server.url]);
    expect((await at('runs', 'signal', 'cli-ada', 'decision', '--payload', '{"ok":true}')).stdout).toBe(
      "signal 'decision' sent to cli-ada\n",
    );
    const followed = await following;
    expect(followed.code).toBe(0);
    expect(followed.stdout).toMatch(/run\.started\s+approval/);
    expect(followed.stdout).toMatch(/run cli-ada success → \{"user":"ada","ok":true\}\n$/);

    await at('runs', 'start', 'approval', '--input', '{"user":"bob"}', '--id', 'cli-bob');
    await eventually(async () => /\bwaiting\b/.test((await at('runs', 'show', 'cli-bob')).stdout));
    await at('runs', 'signal', 'cli-bob', 'decision', '--payload', '{"ok":false}');
    const failed = await run(['events', 'cli-bob', '--follow', '--url', server.url]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/run cli-bob failed: Error: refused by bob/);
    const fromDatabase = await run(['events', 'cli-bob', '--follow', '--database', database]);
    expect(fromDatabase.code).toBe(1);

    await at('runs', 'start', 'approval', '--input', '{"user":"cy"}', '--id', 'cli-cy');
    expect((await at('runs', 'cancel', 'cli-cy')).stdout).toBe(
      `run cli-cy: cancelling (runledger runs show cli-cy --url ${server.url})\n`,
    );
    await eventually(async () => /^cli-cy {2}cancelled/.test((await at('runs', 'show', 'cli-cy')).stdout));
    expect((await at('runs', 'cancel', 'cli-cy')).code).toBe(1);
    expect((await at('runs', 'start', 'nope')).stderr).toMatch(
      /no code workflow is named 'nope' \(registered: approval[,)]/,
    );
  });

  it('run --wait says when a retry is due, and sums up each step at the end; show prints no error for a step that finally succeeded', async () => {
    let calls = 0;
    const flaky = createHttpServer((_request, response) => {
      if (++calls === 1) return void response.writeHead(503).end('busy');
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', r));
    try {
      const file = join(dir, 'flaky.json');
      const url = `http://127.0.0.1:${(flaky.address() as { port: number }).port}/`;
      writeFileSync(
        file,
        JSON.stringify({
          name: 'flaky',
          steps: [
            { id: 'call', type: 'http_request', retry: { max_attempts: 3, backoff_seconds: 1 }, config: { url } },
          ],
        }),
      );
      const id = /created (wf_\w+)/.exec((await at('workflows', 'apply', file)).stdout)![1]!;
      const waited = await at('run', id, '--wait');
      expect(waited.code, waited.stderr).toBe(0);
      expect(waited.stdout).toMatch(/ {2}call: retrying at \d\d:\d\d:\d\d \(in [01]s\) — .*503/);
      expect(waited.stdout).toMatch(
        / {2}call: running \(attempt 2\)\n {2}call: success \d+ ms\nexecution ex_\w+ success in [\d.]+ m?s\n {2}call {2}ok {2}[\d.]+ m?s {2}\(2 attempts\)\noutput: \d+ B — runledger executions show ex_\w+/,
      );
      // the first attempt's 503 is history: the attempts say it, the error column does not
      const eid = /execution (ex_\w+) success/.exec(waited.stdout)![1]!;
      const shown = (await at('executions', 'show', eid)).stdout;
      expect(shown).toMatch(/\ncall +http_request +success +2 +\d+\n/);
      expect(shown).not.toMatch(/503/);
      expect((await at('runs', 'show', eid)).stdout).toMatch(/\ncall +success +2 +\d+\n/);
      expect((await at('runs', 'show', eid)).stdout).not.toMatch(/503/);
    } finally {
      flaky.close();
    }
  });

  it('serve warns when it creates the secrets key inside a git work tree, once', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'runledger-git-'));
    execFileSync('git', ['init', '-q', repo]);
    const start = async () => {
      const started = cli(['serve', '--port', '0', '--database', join(repo, 'app.db')], {
        RUNLEDGER_DATA_DIR: '',
        RUNLEDGER_SECRET_KEY: '',
      });
      await eventually(() => /serving/.test(started.output()), 20_000);
      started.proc.kill('SIGTERM');
      await started.exited;
      return started.output();
    };
    expect(await start()).toMatch(
      new RegExp(
        `warning: created the secrets key ${join(repo, 'secret.key').replace(/[.]/g, '\\.')} inside a git work tree`,
      ),
    );
    expect(await start()).not.toMatch(/warning/);
  });

  it('channel watch: backs off while the server is down and exits 0 on Ctrl-C; stops on 401 with a message', async () => {
    const down = `http://127.0.0.1:${await freePort()}`;
    const watching = cli(['channel', 'watch', 'general', '--url', down]);
    await eventually(() => (watching.output().match(/cannot reach/g) ?? []).length >= 2, 10_000);
    const delays = [...watching.output().matchAll(/trying again in ([\d.]+) s/g)].map((m) => Number(m[1]));
    expect(delays[1]!).toBeGreaterThan(delays[0]!);
    watching.proc.kill('SIGINT');
    expect((await watching.exited).code).toBe(0);

    const guarded = await serve(await backends[0]!.create(), [], { RUNLEDGER_TOKEN: 'right' });
    try {
      const refused = await run(['channel', 'watch', 'general', '--url', guarded.url, '--token', 'wrong']);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toMatch(/refused the token \(401\): set --token or \$RUNLEDGER_TOKEN/);
    } finally {
      guarded.proc.kill('SIGTERM');
      await guarded.exited;
    }
  });
});
