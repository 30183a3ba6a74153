import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { ScenarioContext } from './context.js';
import { freePort } from './proc.js';

const run = promisify(execFile);
const BIN = '/usr/lib/postgresql/15/bin';

/**
 * A throwaway PostgreSQL cluster for scenarios that restart or break the database: `initdb` into a
 * temp folder, its own loopback port, fsync off, run as the `postgres` user; stopped and removed
 * when the scenario is cleaned up. Never the machine's shared server on 5432.
 */
export class Cluster {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  static async create(ctx: ScenarioContext): Promise<Cluster> {
    const dir = mkdtempSync(join(tmpdir(), 'chaos-pg-'));
    chownSync(dir, 101, 104);
    const cluster = new Cluster(dir, await freePort());
    ctx.defer(() => cluster.remove());
    await cluster.pg('initdb', ['-D', cluster.data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    await cluster.start();
    return cluster;
  }

  private get data(): string {
    return join(this.dir, 'data');
  }

  private pg(tool: string, args: string[]) {
    return run('runuser', ['-u', 'postgres', '--', join(BIN, tool), ...args], { cwd: this.dir, timeout: 60_000 });
  }

  private ctl(args: string[]) {
    return this.pg('pg_ctl', ['-D', this.data, '-w', '-t', '60', ...args]);
  }

  start() {
    const options = `-p ${this.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${this.dir} -c fsync=off -c max_connections=200`;
    return this.ctl(['-o', options, '-l', join(this.dir, 'log'), 'start']);
  }

  /** `pg_ctl restart -m fast`: sessions are ended, the shutdown is clean. */
  restart() {
    // without -l the new postmaster keeps pg_ctl's stdout open, and pg_ctl's caller waits for it
    return this.ctl(['-m', 'fast', '-l', join(this.dir, 'log'), 'restart']);
  }

  /** `pg_ctl stop -m immediate`: a crash, recovered from WAL on the next start. */
  stop(mode: 'fast' | 'immediate' = 'immediate') {
    return this.ctl(['-m', mode, 'stop']);
  }

  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async createDatabase(name: string): Promise<string> {
    const admin = new pg.Client({ connectionString: this.url() });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}`);
    } finally {
      await admin.end();
    }
    return this.url(name);
  }

  async remove(): Promise<void> {
    await this.stop('immediate').catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}
