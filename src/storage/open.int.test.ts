import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { openApp } from '../app/open.js';
import { testAdminUrl } from '../testing/databases.js';
import { DatabaseUnavailableError } from './location.js';
import { openStore } from './open.js';

const temp = () => mkdtempSync(join(tmpdir(), 'rl-open-'));

/** A local port nothing listens on: one just bound and closed again. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('openStore: where a database may be opened', () => {
  it('refuses a SQLite file in a directory that does not exist, naming it, and creates nothing', async () => {
    const missing = join(temp(), 'not', 'there');
    await expect(openStore(join(missing, 'x.db'))).rejects.toThrow(
      `database: the directory ${missing} does not exist: create it first, or pass --create-dirs (createDirs: true)`,
    );
    expect(existsSync(join(missing, '..'))).toBe(false);
  });

  it('creates the directory when asked', async () => {
    const file = join(temp(), 'a', 'b', 'x.db');
    const store = await openStore(file, { createDirs: true });
    await store.close();
    expect(existsSync(file)).toBe(true);
  });

  it('openApp refuses a missing directory before its key file would have made it, and a mistyped URL before anything', async () => {
    const missing = join(temp(), 'nope');
    await expect(openApp({ database: join(missing, 'x.db'), workers: false })).rejects.toThrow(
      /the directory .*nope does not exist/,
    );
    expect(existsSync(missing)).toBe(false);
    await expect(openApp({ database: 'postgress://postgres@127.0.0.1/rl', workers: false })).rejects.toThrow(
      "database: unknown scheme 'postgress://'",
    );
    expect(existsSync('postgress:')).toBe(false);
  });

  it('openApp on a PostgreSQL server it cannot reach leaves no key file behind', async () => {
    const dataDir = temp();
    await expect(
      openApp({ database: `postgres://postgres@127.0.0.1:${await closedPort()}/rl`, dataDir, workers: false }),
    ).rejects.toThrow(/connection refused/);
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('names a PostgreSQL database that does not exist and how to create it, without the password', async () => {
    const url = new URL(testAdminUrl());
    const name = `rl_missing_${randomBytes(4).toString('hex')}`;
    url.pathname = `/${name}`;
    url.password = 'hidden-pw';
    const error = await openStore(url.toString()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatabaseUnavailableError);
    const message = (error as Error).message;
    expect(message).toContain(
      `database '${name}' does not exist — create it: createdb -h ${url.hostname} -p ${url.port || 5432} -U ${url.username} ${name}`,
    );
    expect(message).toContain(`${url.username}:***@`);
    expect(message).not.toContain('hidden-pw');
  });

  it('asks whether PostgreSQL runs on a port that refuses', async () => {
    const port = await closedPort();
    await expect(openStore(`postgres://postgres:pw@127.0.0.1:${port}/rl`)).rejects.toThrow(
      `database: postgres://postgres:***@127.0.0.1:${port}/rl: connection refused — is PostgreSQL running on 127.0.0.1:${port}?`,
    );
  });
});
