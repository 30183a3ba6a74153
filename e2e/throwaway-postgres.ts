import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './child.js';

const BIN = '/usr/lib/postgresql/15/bin';

/** A PostgreSQL cluster of its own (initdb in a temp dir, its own port) that a test may stop and start; never the shared one on 5432. */
export interface ThrowawayPostgres {
  port: number;
  /** The URL of its `postgres` database (trust auth, user postgres). */
  url: string;
  /** `pg_ctl stop -m <mode>`: `immediate` is a crash, `fast` a clean shutdown. */
  stop(mode?: 'fast' | 'immediate'): void;
  start(): void;
  /** Stops it (if running) and removes its directory. */
  remove(): void;
}

/** initdb refuses to run as root: as root, the cluster is run as the `postgres` user. */
function run(command: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  execFileSync(
    asRoot ? 'runuser' : join(BIN, command),
    asRoot ? ['-u', 'postgres', '--', join(BIN, command), ...args] : args,
    { stdio: 'pipe' },
  );
}

/**
 * Creates and starts a cluster on a free loopback port.
 *
 * @example const pg = await throwawayPostgres(); try { … pg.stop('immediate'); … pg.start(); } finally { pg.remove(); }
 */
export async function throwawayPostgres(): Promise<ThrowawayPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
  let running = false;
  const cluster: ThrowawayPostgres = {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop(mode = 'immediate') {
      run('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
      running = false;
    },
    start() {
      run('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
      running = true;
    },
    remove() {
      if (running) {
        try {
          cluster.stop('immediate');
        } catch {
          // already down
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  cluster.start();
  return cluster;
}
