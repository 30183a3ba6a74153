import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { TerminalError } from '../errors.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import type { BatchItem } from './batch.js';

const quick = { baseMs: 10, factor: 2, maxMs: 50, jitter: 0.2 };

describe.each(backends)('a worker taking tasks in batches on $name', (backend) => {
  let engine: Engine;
  let close: () => Promise<void>;
  beforeEach(async () => ({ engine, close } = await testEngine(backend)));
  afterEach(() => close());

  const enqueue = async (queue: string, count: number) => {
    const ids: string[] = [];
    for (let n = 0; n < count; n++) ids.push((await engine.queue.enqueue(queue, { n })).task.id);
    return ids;
  };
  const settled = (ids: string[]) =>
    eventually(async () => {
      const tasks = await Promise.all(ids.map((id) => engine.queue.get(id)));
      return tasks.every((t) => t.state === 'completed' || t.state === 'dead') && tasks;
    });

  it('hands the handler full batches at once, settling each task with its own result', async () => {
    const ids = await enqueue('rows', 10);
    const calls: number[][] = [];
    engine.work(
      'rows',
      async (items: BatchItem<{ n: number }>[]) => {
        calls.push(items.map((i) => i.payload.n));
        return items.map((i) => ({ doubled: i.payload.n * 2 }));
      },
      // an hour's timeout: only a full batch can start the handler within the test
      { batch: { maxSize: 5, timeout: '1h' } },
    );
    const tasks = await settled(ids);
    expect(calls.map((c) => c.length)).toEqual([5, 5]);
    expect(calls.flat().sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const [n, task] of tasks.entries())
      expect(task).toMatchObject({ state: 'completed', result: { doubled: n * 2 } });
  });

  it('calls the handler with fewer tasks once the timeout passes', async () => {
    const ids = await enqueue('few', 3);
    const calls: number[] = [];
    engine.work(
      'few',
      async (items: BatchItem[]) => {
        calls.push(items.length);
        return items.map(() => 'ok');
      },
      { batch: { maxSize: 100, timeout: '300ms' } },
    );
    await settled(ids);
    expect(calls).toEqual([3]);
  });

  it('hands over an open batch when its worker stops, without waiting for the timeout', async () => {
    const ids = await enqueue('stopping', 2);
    const calls: number[] = [];
    const worker = engine.work(
      'stopping',
      async (items: BatchItem[]) => {
        calls.push(items.length);
        return items.map(() => 'done');
      },
      { batch: { maxSize: 10, timeout: '1h' } },
    );
    await eventually(async () => {
      const tasks = await Promise.all(ids.map((id) => engine.queue.get(id)));
      return tasks.every((t) => t.state === 'running');
    });
    expect(calls).toEqual([]);
    await worker.stop();
    expect(calls).toEqual([2]);
    expect((await Promise.all(ids.map((id) => engine.queue.get(id)))).map((t) => t.state)).toEqual([
      'completed',
      'completed',
    ]);
  });

  it('fails a task whose result is an Error alone, and every task of a batch whose handler throws', async () => {
    const ids = await enqueue('mixed', 4);
    let throws = true;
    const seen: Array<[number, number]> = [];
    engine.work(
      'mixed',
      async (items: BatchItem<{ n: number }>[]) => {
        for (const i of items) seen.push([i.payload.n, i.ctx.attempt]);
        if (throws) {
          throws = false;
          throw new Error('the bulk insert failed');
        }
        return items.map((i) =>
          i.payload.n === 1 && i.ctx.attempt < 3
            ? new Error('row 1 rejected')
            : i.payload.n === 3
              ? new TerminalError('row 3 is bad')
              : i.payload.n,
        );
      },
      { batch: { maxSize: 4, timeout: '200ms' }, backoff: quick },
    );
    const tasks = await settled(ids);
    expect(tasks.map((t) => t.state)).toEqual(['completed', 'completed', 'completed', 'dead']);
    expect(tasks.map((t) => t.attempts)).toEqual([2, 3, 2, 2]);
    expect(tasks[0]!.result).toBe(0);
    expect(tasks[1]!.result).toBe(1);
    // the first call failed all four; the second failed row 1 (retried alone) and row 3 for good
    expect(seen.filter(([n]) => n === 1).map(([, a]) => a)).toEqual([1, 2, 3]);
    expect(seen.filter(([n]) => n === 0).map(([, a]) => a)).toEqual([1, 2]);
  });

  it('refuses a bad batch naming the field', () => {
    const handler = async () => [];
    expect(() => engine.work('bad', handler, { batch: { maxSize: 0, timeout: '1s' } })).toThrow(
      /^batch\.maxSize: must be a whole number from 1 to 1000/,
    );
    expect(() => engine.work('bad', handler, { batch: { maxSize: 2, timeout: '5ms' } })).toThrow(
      /^batch\.timeout: must be from 10ms to 1h/,
    );
    expect(() => engine.work('bad', handler, { batch: { maxSize: 2, timeout: '2h' } })).toThrow(/^batch\.timeout/);
    expect(() => engine.work('bad', handler, { batch: { maxSize: 5, timeout: '1s' }, concurrency: 2 })).toThrow(
      /^concurrency: must be at least batch\.maxSize/,
    );
  });
});
