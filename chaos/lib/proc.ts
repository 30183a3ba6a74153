import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ScenarioContext } from './context.js';

/** The repository root: children run its `bin/runledger.js`, which runs `dist/` (`npm run build` first). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A `runledger serve` or `runledger worker` child process. */
export interface Child {
  readonly label: string;
  readonly pid: number;
  readonly proc: ChildProcess;
  /** Everything it printed so far. */
  output(): string;
  readonly exited: Promise<Exit>;
  alive(): boolean;
  /** True once the scenario asked it to end (a kill or a stop): any other exit is a crash. */
  told: boolean;
  kill(signal?: NodeJS.Signals): Promise<Exit>;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<Exit>;
}

export interface ChildOptions {
  database: string;
  env?: NodeJS.ProcessEnv;
}

/** The settings every child of a scenario shares: its key file and the echo server it may reach. */
export function baseEnv(ctx: ScenarioContext): NodeJS.ProcessEnv {
  const dataDir = join(ctx.dir, 'data');
  mkdirSync(dataDir, { recursive: true });
  return { RUNLEDGER_DATA_DIR: dataDir, RUNLEDGER_HTTP_ALLOW: '127.0.0.1', LOG_LEVEL: 'info' };
}

/** A free loopback port, so a restarted server listens where its clients already point. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

function launch(
  ctx: ScenarioContext,
  label: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
): Promise<Child> {
  const proc = spawn(process.execPath, [join(ROOT, 'bin/runledger.js'), ...args], {
    cwd: ctx.dir,
    env: { ...process.env, ...baseEnv(ctx), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logFile = join(ctx.dir, `${label}.log`);
  let output = '';
  const keep = (chunk: Buffer) => {
    output += chunk;
    appendFileSync(logFile, chunk);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  let done = false;
  const exited = new Promise<Exit>((resolveExit) =>
    proc.on('exit', (code, signal) => {
      done = true;
      if (!child.told)
        ctx.crashes.push(
          `${label} ${proc.pid} exited by itself (${code ?? signal}): ${headline(output)} (see ${logFile})`,
        );
      resolveExit({ code, signal });
    }),
  );
  const child: Child = {
    label,
    pid: proc.pid!,
    proc,
    output: () => output,
    exited,
    alive: () => !done,
    told: false,
    kill: (signal = 'SIGKILL') => {
      child.told = true;
      if (!done) proc.kill(signal);
      return exited;
    },
    stop: async (graceMs = 15_000) => {
      child.told = true;
      if (done) return exited;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      const exit = await exited;
      clearTimeout(timer);
      return exit;
    },
  };
  ctx.children.add(child);
  void exited.then(() => ctx.children.delete(child));
  return new Promise((resolveChild, reject) => {
    const started = Date.now();
    const poll = setInterval(() => {
      if (ready.test(output)) {
        clearInterval(poll);
        resolveChild(child);
      } else if (done || Date.now() - started > 30_000) {
        clearInterval(poll);
        void child.kill();
        reject(new Error(`${label} did not start:\n${output.slice(-2000)}`));
      }
    }, 25);
  });
}

/** The first line of the error a process died of, from the end of its output. */
function headline(output: string): string {
  const tail = output.slice(-6000);
  return /^(?:[A-Za-z]*Error|error)\b[^\n]*/m.exec(tail)?.[0] ?? tail.slice(-300).replace(/\s+/g, ' ');
}

/** `runledger serve` on `port`; resolves once it listens. */
export function startServe(
  ctx: ScenarioContext,
  o: ChildOptions & { port: number; label?: string; args?: string[] },
): Promise<Child> {
  const flag = o.database.startsWith('postgres') ? '--database-url' : '--db';
  return launch(
    ctx,
    o.label ?? 'serve',
    ['serve', '--port', String(o.port), flag, o.database, ...(o.args ?? [])],
    o.env ?? {},
    /serving http:\/\//,
  );
}

/** `runledger worker` (with the code workflows of `workflows`, a module path); resolves once it works. */
export function startWorker(
  ctx: ScenarioContext,
  o: ChildOptions & { workflows?: string; label?: string },
): Promise<Child> {
  const args = ['worker', '--database', o.database, ...(o.workflows ? ['--workflows', o.workflows] : [])];
  return launch(ctx, o.label ?? 'worker', args, o.env ?? {}, /worker \d+: /);
}

/**
 * A child kept running like a supervisor would: started again whenever it exits (a kill by the
 * scenario or a crash), until `stop()`.
 */
export class Supervised {
  private child: Child | null = null;
  private stopped = false;
  private starting: Promise<Child> | null = null;

  constructor(
    private readonly ctx: ScenarioContext,
    private readonly start: () => Promise<Child>,
  ) {}

  /** The running child, started (again) if there is none. */
  async up(): Promise<Child> {
    if (this.child?.alive()) return this.child;
    this.starting ??= this.launch().finally(() => (this.starting = null));
    return this.starting;
  }

  private async launch(): Promise<Child> {
    for (;;) {
      try {
        const child = await this.start();
        this.child = child;
        void child.exited.then(() => {
          if (!this.stopped) void this.up().catch(() => {});
        });
        return child;
      } catch (error) {
        if (this.stopped || this.ctx.msLeft() < 0) throw error;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  /** SIGKILL (or `signal`) the current child; resolves once its successor is up. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<Child> {
    const child = await this.up();
    await child.kill(signal);
    return this.up();
  }

  current(): Child | null {
    return this.child;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.starting?.catch(() => {});
    await this.child?.stop();
  }
}
