import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Engine } from '../dist/engine.js';
import { perSecond } from './journal.js';

/** Tasks per second of enqueueing `count` no-op tasks with `enqueueMany`, `chunk` per call, sequentially. */
export async function bulkEnqueue(engine: Engine, queue: string, count: number, chunk: number): Promise<number> {
  const start = performance.now();
  for (let from = 0; from < count; from += chunk) {
    const items = Array.from({ length: Math.min(chunk, count - from) }, (_, i) => ({ payload: { i: from + i } }));
    await engine.queue.enqueueMany(queue, items);
  }
  return perSecond(count, start);
}

const CHILD = fileURLToPath(new URL('./drain-child.ts', import.meta.url));
const TIMEOUT_MS = 120_000;

/**
 * Tasks per second of `processes` child workers (`concurrency` each, default 10) draining `count`
 * ready tasks of `queue`: from "start" (sent to all once all are connected) to the report that
 * brings their completed counts to `count`.
 */
export async function drain(
  database: string,
  queue: string,
  count: number,
  processes: number,
  concurrency = 10,
): Promise<number> {
  const children = Array.from({ length: processes }, () =>
    spawn(process.execPath, ['--import', 'tsx', CHILD, database, queue, String(concurrency)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const exited = children.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
  try {
    await Promise.all(children.map((child) => nextMessage(child, (m) => m === 'ready')));
    const counts = new Array<number>(processes).fill(0);
    const drained = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`drain of ${queue}: ${sum(counts)} of ${count} completed after ${TIMEOUT_MS} ms`)),
        TIMEOUT_MS,
      );
      children.forEach((child, i) => {
        child.on('message', (m: { completed?: number }) => {
          if (typeof m?.completed !== 'number') return;
          counts[i] = m.completed;
          if (sum(counts) >= count) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      for (const child of children)
        child.once('exit', (code) => reject(new Error(`drain child exited early (code ${code})`)));
    });
    const start = performance.now();
    for (const child of children) child.send('start');
    await drained;
    return perSecond(count, start);
  } finally {
    for (const child of children) {
      if (child.connected) child.send('stop');
      else child.kill();
    }
    await Promise.all(exited);
  }
}

function nextMessage(child: ChildProcess, match: (message: unknown) => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    child.on('message', function onMessage(message) {
      if (!match(message)) return;
      child.off('message', onMessage);
      resolve();
    });
    child.once('exit', (code) => reject(new Error(`drain child exited before it was ready (code ${code})`)));
  });
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
