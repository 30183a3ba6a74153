import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { eventually } from '../src/testing/engine.js';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** What a finished command printed, and its exit code. */
export interface Answer {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `runledger` binary with `args` to its end, with no server or database from the environment. */
export function runCli(args: string[]): Promise<Answer> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [resolve('bin/runledger.js'), ...args],
      { encoding: 'utf8', env: { ...process.env, RUNLEDGER_URL: '', RUNLEDGER_DATABASE: '' } },
      (error, stdout, stderr) => done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Runs `node --import tsx <script> …args` to its end (or its kill); resolves with how it ended. */
export function runScript(script: string, ...args: string[]): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', script, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (chunk) => (stderr += chunk));
    proc.on('error', reject);
    proc.on('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
}

export interface Cli {
  proc: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `node bin/runledger.js …args` as a real process (needs `tsc -p tsconfig.build.json` first), its output kept. */
export function cli(args: string[], env: NodeJS.ProcessEnv = {}): Cli {
  return node(['bin/runledger.js', ...args], env);
}

/** `node …args` as a real process, its output kept. */
export function node(args: string[], env: NodeJS.ProcessEnv = {}): Cli {
  const proc = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout!.on('data', (chunk) => (output += chunk));
  proc.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    proc.on('exit', (code, signal) => done({ code, signal })),
  );
  return { proc, output: () => output, exited };
}

export interface Served extends Cli {
  url: string;
}

/**
 * `runledger serve --port 0 …args` on `database` (a SQLite path or PostgreSQL URL) with a fresh data
 * directory for its key file; resolves once it listens.
 */
export async function serve(database: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Served> {
  const server = cli(['serve', '--port', '0', '--database', database, ...args], {
    RUNLEDGER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rl-serve-')),
    ...env,
  });
  const url = await eventually(() => /serving (http:\/\/\S+)/.exec(server.output())?.[1], 20_000).catch(() => {
    server.proc.kill('SIGKILL');
    throw new Error(`runledger serve did not start:\n${server.output()}`);
  });
  return { ...server, url };
}

/** A port nothing listens on (taken, then let go): a process started on it has a URL known before it starts. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
