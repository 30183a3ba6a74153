import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { testAdminUrl } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { cli, serve, type Cli, freePort } from './child.js';

// The collisions of a newcomer following the README (issue 42, points 4 and 5), with real
// processes of the compiled CLI (`npx tsc -p tsconfig.build.json` first).

interface Answer {
  code: number;
  stdout: string;
  stderr: string;
}

/** `runledger …args` in `cwd` to its end (never throws on a non-zero exit). */
function run(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Answer> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [resolve('bin/runledger.js'), ...args],
      {
        cwd,
        encoding: 'utf8',
        timeout: 30_000,
        env: { ...process.env, RUNLEDGER_DATABASE: '', DATABASE_URL: '', RUNLEDGER_DATA_DIR: cwd, ...env },
      },
      (error, stdout, stderr) => done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const temp = () => mkdtempSync(join(tmpdir(), 'rl-collide-'));
const running: Cli[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) {
    p.proc.kill('SIGTERM');
    await p.exited;
  }
});

describe('a second server on a port in use', () => {
  it('fails with one line naming the port and the fix, exit 1', async () => {
    const dir = temp();
    const port = await freePort();
    const first = cli(['serve', '--port', String(port), '--database', join(dir, 'a.db')], { RUNLEDGER_DATA_DIR: dir });
    running.push(first);
    await eventually(() => /serving/.test(first.output()), 20_000);
    const second = await run(['serve', '--port', String(port), '--database', join(dir, 'b.db')], dir);
    expect(second.code).toBe(1);
    expect(second.stdout).toBe('');
    expect(second.stderr).toBe(
      `port ${port} is in use on 127.0.0.1 — is another runledger running? use --port <n> (or PORT)\n`,
    );
  }, 60_000);
});

describe.each(backends)('processes on one database with different settings ($name)', (backend) => {
  it('a worker started beside a serve with another RUNLEDGER_HTTP_ALLOW warns naming it; doctor reports it; the same settings say nothing', async () => {
    const database = await backend.create();
    const key = { RUNLEDGER_SECRET_KEY: randomBytes(32).toString('hex') };
    const server = await serve(database, [], { ...key, RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
    running.push(server);
    const same = cli(['worker', '--database', database], { ...key, RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
    running.push(same);
    await eventually(() => /worker \d+: stored workflows/.test(same.output()), 20_000);
    expect(same.output()).not.toMatch(/warning/);
    const other = cli(['worker', '--database', database], { ...key, RUNLEDGER_HTTP_ALLOW: '' });
    running.push(other);
    await eventually(() => /worker \d+: stored workflows/.test(other.output()), 20_000);
    expect(other.output()).toContain(
      `warning: process ${server.proc.pid}@${hostname()} (serve) has RUNLEDGER_HTTP_ALLOW=127.0.0.1 and this one has none: steps may run with either; give every process the same settings\n`,
    );
    const doctor = await run(['doctor', '--database', database, '--sample', '50'], temp(), key);
    const at = (p: Cli) => `${p.proc.pid}@${hostname()}`;
    expect(doctor.stdout).toContain(
      `WARN  process settings  ${at(server)} (serve), ${at(same)} (worker) have RUNLEDGER_HTTP_ALLOW=127.0.0.1; ${at(other)} (worker) has no RUNLEDGER_HTTP_ALLOW: steps may run with either; give every process the same settings\n`,
    );
  }, 90_000);
});

describe('a mistyped database', () => {
  it.each([
    [
      'postgress://postgres@127.0.0.1/app',
      "--database: unknown scheme 'postgress://' — use a file path (SQLite) or postgres://user@host:5432/db",
    ],
    [
      'mysql://root@127.0.0.1/app',
      "--database: unknown scheme 'mysql://' — use a file path (SQLite) or postgres://user@host:5432/db",
    ],
  ])(
    '%s is refused in one line, exit 1, and nothing is created',
    async (location, line) => {
      const dir = temp();
      for (const command of ['serve', 'worker']) {
        const answer = await run(
          [command, '--database', location, ...(command === 'serve' ? ['--port', '0'] : [])],
          dir,
        );
        expect(answer.code).toBe(1);
        expect(answer.stderr).toBe(`${line}\n`);
      }
      const fromEnv = await run(['worker'], dir, { DATABASE_URL: location });
      expect(fromEnv.stderr).toBe(`${line.replace('--database', 'DATABASE_URL')}\n`);
      expect(readdirSync(dir)).toEqual([]);
    },
    60_000,
  );

  it('a SQLite file in a missing directory is an error naming it, unless --create-dirs', async () => {
    const dir = temp();
    const missing = join(dir, 'nonexistent', 'dir');
    const answer = await run(['worker', '--database', join(missing, 'x.db')], dir);
    expect(answer.code).toBe(1);
    expect(answer.stderr).toBe(
      `database: the directory ${missing} does not exist: create it first, or pass --create-dirs (createDirs: true)\n`,
    );
    expect(existsSync(join(dir, 'nonexistent'))).toBe(false);
    const created = cli(['serve', '--port', '0', '--create-dirs', '--database', join(missing, 'x.db')], {
      RUNLEDGER_DATA_DIR: dir,
    });
    running.push(created);
    await eventually(() => /serving/.test(created.output()), 20_000);
    expect(existsSync(join(missing, 'x.db'))).toBe(true);
  }, 60_000);

  it('a PostgreSQL database that does not exist, or a port that refuses, is one line with the URL (no password) and the fix', async () => {
    const url = new URL(testAdminUrl());
    const name = `rl_missing_${randomBytes(4).toString('hex')}`;
    url.pathname = `/${name}`;
    url.password = 'pw';
    const masked = url.toString().replace(':pw@', ':***@');
    const missing = await run(['worker', '--database', url.toString()], temp());
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      `database: ${masked}: database '${name}' does not exist — create it: createdb -h ${url.hostname} -p ${url.port || 5432} -U ${url.username} ${name}\n`,
    );
    const port = await freePort();
    const refused = await run(
      ['serve', '--port', '0', '--database', `postgres://postgres:pw@127.0.0.1:${port}/app`],
      temp(),
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `database: postgres://postgres:***@127.0.0.1:${port}/app: connection refused — is PostgreSQL running on 127.0.0.1:${port}?\n`,
    );
  }, 60_000);
});
