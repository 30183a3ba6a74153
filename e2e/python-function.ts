import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { eventually } from '../src/testing/engine.js';
import { freePort } from './child.js';

/** examples/python/function.py as a real process: its port, secret and side-effects file stay across restarts. */
export interface PythonFunction {
  port: number;
  secret: string;
  /** The file each step execution appends `<run id>:<step id> <what>` to. */
  sideEffects: string;
  /** Starts the process on `port` (again, after a kill); resolves once it listens. */
  start(): Promise<ChildProcess>;
  output(): string;
}

/** The onboard function of examples/python/function.py, its durable sleep `sleep` ("1s", "4s" …). */
export async function pythonFunction(sleep: string): Promise<PythonFunction> {
  const port = await freePort();
  const secret = randomBytes(32).toString('hex');
  const sideEffects = join(mkdtempSync(join(tmpdir(), 'rl-pyfn-')), 'side-effects.log');
  let output = '';
  return {
    port,
    secret,
    sideEffects,
    output: () => output,
    start: async () => {
      const proc = spawn('python3', [resolve('examples/python/function.py')], {
        env: {
          ...process.env,
          PYTHONPATH: resolve('clients/python'),
          PYTHONDONTWRITEBYTECODE: '1',
          RUNLEDGER_FUNCTION_SECRET: secret,
          SIDE_EFFECTS: sideEffects,
          SLEEP: sleep,
          PORT: String(port),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const mark = `listening on ${port}`;
      const before = output.split(mark).length;
      proc.stdout.on('data', (chunk) => (output += chunk));
      proc.stderr.on('data', (chunk) => (output += chunk));
      await eventually(() => output.split(mark).length > before, 20_000).catch(() => {
        proc.kill('SIGKILL');
        throw new Error(`examples/python/function.py did not start:\n${output}`);
      });
      return proc;
    },
  };
}

/** The side-effects file's lines, sorted (empty when no step has run). */
export function sideEffectLines(file: string): string[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return text.split('\n').filter(Boolean).sort();
}

/** What onboard's two steps write for `runs` (id → email), each exactly once, sorted like sideEffectLines. */
export function expectedSideEffects(runs: Map<string, string>): string[] {
  return [...runs]
    .flatMap(([id, email]) => [
      `${id}:create-account create account ${email}`,
      `${id}:send-welcome send welcome to ${email}`,
    ])
    .sort();
}
