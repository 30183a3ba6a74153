import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPostgresDatabase } from '../../src/testing/databases.js';
import type { Child } from './proc.js';
import { seeded, type Random } from './random.js';

export type BackendName = 'sqlite' | 'postgres';

/** What a scenario is given: its backend, size, seed, a temp folder, and what to clean up. */
export class ScenarioContext {
  readonly random: Random;
  readonly dir: string;
  /** ms since the epoch: the scenario must have stopped its load by then. */
  readonly deadline: number;
  /** Databases the journal checker reads once the scenario's processes are stopped. */
  readonly databases: string[] = [];
  readonly children = new Set<Child>();
  /** Children that exited without being told to, with the end of their output. */
  readonly crashes: string[] = [];
  private readonly cleanups: Array<() => Promise<void> | void> = [];

  constructor(
    readonly name: string,
    readonly backend: BackendName,
    readonly short: boolean,
    seed: number,
    limitMs: number,
    readonly log: (line: string) => void,
  ) {
    this.random = seeded(seed);
    this.dir = mkdtempSync(join(tmpdir(), `chaos-${name}-`));
    this.deadline = Date.now() + limitMs;
  }

  /** The full size, or the short one under `--short`. */
  size<T>(full: T, short: T): T {
    return this.short ? short : full;
  }

  msLeft(): number {
    return this.deadline - Date.now();
  }

  /** A fresh database of this scenario's backend: a file here, or a new database on the shared PostgreSQL server. */
  async database(): Promise<string> {
    const location = this.backend === 'sqlite' ? join(this.dir, 'app.db') : await createPostgresDatabase();
    this.databases.push(location);
    return location;
  }

  /** Runs after the journal checker, newest first (unmounts, cluster removal). */
  defer(fn: () => Promise<void> | void): void {
    this.cleanups.push(fn);
  }

  /** Runs the deferred cleanups; the temp folder (logs, SQLite files) stays when `keep`, for inspection. */
  async cleanup(keep: boolean): Promise<void> {
    for (const fn of this.cleanups.reverse()) {
      try {
        await fn();
      } catch (error) {
        this.log(`cleanup failed: ${String(error)}`);
      }
    }
    if (!keep) rmSync(this.dir, { recursive: true, force: true });
  }
}
