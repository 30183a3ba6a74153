import { spawn } from 'node:child_process';
import type { Exit } from './child.js';

export interface WorkerProcess {
  readonly pid: number;
  /** Resolves once the worker's engine is open and working; rejects if it exits first. */
  readonly ready: Promise<void>;
  readonly exited: Promise<Exit>;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<Exit>;
}

/** Starts `e2e/fault-child.ts` (or another worker script that prints `ready`): a worker process for the fault workflows on `database`. */
export function startWorker(
  database: string,
  log: string,
  concurrency?: number,
  script = 'e2e/fault-child.ts',
): WorkerProcess {
  const args = ['--import', 'tsx', script, database, log, ...(concurrency === undefined ? [] : [String(concurrency)])];
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<Exit>((resolve, reject) => {
    proc.on('error', reject);
    proc.on('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
  const ready = new Promise<void>((resolve, reject) => {
    proc.stdout.on('data', (chunk) => {
      stdout += chunk;
      if (stdout.includes('ready\n')) resolve();
    });
    void exited.then((exit) =>
      reject(new Error(`worker ${proc.pid} exited before it was ready (${exit.code ?? exit.signal}): ${exit.stderr}`)),
    );
  });
  ready.catch(() => {});
  return {
    pid: proc.pid!,
    ready,
    exited,
    kill: () => {
      proc.kill('SIGKILL');
      return exited;
    },
  };
}
