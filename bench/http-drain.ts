// http_worker_drain_per_s: one Python process (clients/python, claiming 100 at a time) drains `count` no-op tasks
// over the task protocol from a `runledger serve` child on the same database. Alone, next to drain_per_s on the
// same database: `node --import tsx bench/http-drain.ts [sqlite|postgres] [concurrency] [linger]` (needs dist/ built).
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEngine, type Engine } from '../dist/engine.js';
import { type Backend, withDatabase } from './databases.js';
import { bulkEnqueue, drain } from './queue.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Tasks per second the Python worker completed, from its first claim to its last completion. */
export async function httpDrain(
  engine: Engine,
  database: string,
  count: number,
  concurrency = 8,
  linger = '10ms',
): Promise<number> {
  await bulkEnqueue(engine, 'http1', count, 5_000);
  const server = spawn(process.execPath, ['bin/runledger.js', 'serve', '--port', '0', '--database', database], {
    cwd: ROOT,
    env: { ...process.env, RUNLEDGER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rl-bench-serve-')) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`runledger serve did not start:\n${output}`)), 30_000);
      const read = (chunk: Buffer) => {
        output += chunk;
        const found = /serving (http:\/\/\S+)/.exec(output)?.[1];
        if (found) {
          clearTimeout(timer);
          resolve(found);
        }
      };
      server.stdout.on('data', read);
      server.stderr.on('data', read);
    });
    const report = await new Promise<string>((resolve, reject) => {
      const worker = spawn(
        'python3',
        [join(ROOT, 'bench/http-drain.py'), url, 'http1', String(count), String(concurrency), linger],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      let out = '';
      worker.stdout.on('data', (chunk) => (out += chunk));
      worker.on('error', reject);
      worker.on('exit', (code) =>
        code === 0 ? resolve(out) : reject(new Error(`bench/http-drain.py exited with ${code}`)),
      );
    });
    console.error(`  http-drain.py: ${report.trim()}`);
    return (JSON.parse(report) as { per_s: number }).per_s;
  } finally {
    server.kill('SIGTERM');
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const backend = (process.argv[2] ?? 'sqlite') as Backend;
  const concurrency = Number(process.argv[3] ?? 8);
  const linger = process.argv[4] ?? '10ms';
  const tasks = 20_000;
  await withDatabase(backend, async (database) => {
    const engine = await createEngine({ database });
    try {
      await bulkEnqueue(engine, 'drain1', tasks, 5_000);
      const inProcess = await drain(database, 'drain1', tasks, 1);
      const http = await httpDrain(engine, database, tasks, concurrency, linger);
      console.log(
        `${backend} drain_per_s: ${Math.round(inProcess)}  http_worker_drain_per_s: ${Math.round(http)} (python concurrency ${concurrency}, linger ${linger}, ${Math.round((100 * http) / inProcess)}% of drain_per_s)`,
      );
    } finally {
      await engine.close();
    }
  });
}
