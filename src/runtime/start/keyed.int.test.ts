import { describe, expect, it } from 'vitest';
import { newId } from '../../ids.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import { keyStream, RUN_KEYS } from './keyed.js';
import { workflow } from '../workflow.js';

const echo = workflow('keyed-echo', async (_ctx, input: { n: number }) => input.n);

describe.each(backends)('keyed starts on $name', (backend) => {
  it('names one run per (scope, key): a repeat and concurrent starts, from two processes, return it and start nothing more', async () => {
    const { engine, second, close } = await testEngine(backend, { workflows: [echo] });
    try {
      const other = await second();
      let begun = 0;
      const start = (e: typeof engine, n: number) =>
        e.runtime.startKeyed({
          scope: 'test',
          key: 'k-1',
          name: async () => ({ runId: newId('run') }),
          begin: async (tx, id) => {
            begun += 1;
            await e.runtime.start(echo, { n }, { id, tx });
          },
        });
      const results = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => start(n % 2 ? engine : other, n)));
      const ids = new Set(results.map((r) => r.runId));
      expect(ids.size).toBe(1);
      expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
      const [runId] = [...ids];
      const again = await start(engine, 9);
      expect(again).toEqual({ runId, duplicate: true, data: { run_id: runId } });
      // each losing begin rolled back with its transaction: one run, one key event
      expect(await engine.journal.readStream(keyStream('test', 'k-1'))).toHaveLength(1);
      expect(begun).toBeGreaterThanOrEqual(1);
      const view = await eventually(async () =>
        (await engine.run(runId!)).status === 'success' ? engine.run(runId!) : undefined,
      );
      expect([1, 2, 3, 4, 5, 6]).toContain(view.output);
      // another scope, the same key: another run
      const elsewhere = await engine.runtime.startKeyed({
        scope: 'other',
        key: 'k-1',
        name: async () => ({ runId: newId('run') }),
        begin: async (tx, id) => void (await engine.runtime.start(echo, { n: 0 }, { id, tx })),
      });
      expect(elsewhere.runId).not.toBe(runId);
    } finally {
      await close();
    }
  });

  it("starts inside a caller's transaction: nothing exists if it rolls back, and a throwing begin leaves the key free", async () => {
    const { engine, close } = await testEngine(backend, { workflows: [echo] });
    try {
      const attempt = (fail: boolean) =>
        engine.store.transaction(async (tx) => {
          const keyed = await engine.runtime.startKeyed({
            scope: 'tx',
            key: 'k',
            tx,
            name: async () => ({ runId: 'run_keyed_tx' }),
            begin: async (t, id) => void (await engine.runtime.start(echo, { n: 1 }, { id, tx: t })),
          });
          if (fail) throw new Error('the caller rolls back');
          return keyed;
        });
      await expect(attempt(true)).rejects.toThrow('the caller rolls back');
      expect(await engine.journal.readStream(keyStream('tx', 'k'))).toEqual([]);
      await expect(engine.run('run_keyed_tx')).rejects.toThrow(/not found/);
      await expect(
        engine.runtime.startKeyed({
          scope: 'tx',
          key: 'k',
          name: async () => ({ runId: 'run_keyed_tx' }),
          begin: async () => {
            throw new Error('begin failed');
          },
        }),
      ).rejects.toThrow('begin failed');
      expect(await engine.journal.readStream(keyStream('tx', 'k'))).toEqual([]);
      expect(await attempt(false)).toEqual({
        runId: 'run_keyed_tx',
        duplicate: false,
        data: { run_id: 'run_keyed_tx' },
      });
      expect(await engine.store.projectionGet({ name: RUN_KEYS, key: 'run_keyed_tx' })).toEqual([keyStream('tx', 'k')]);
    } finally {
      await close();
    }
  });

  it('retention deletes the key stream with its run: the key is free again', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [echo] });
    try {
      const start = () =>
        engine.runtime.startKeyed({
          scope: 'ret',
          key: 'k',
          name: async () => ({ runId: newId('run') }),
          begin: async (tx, id) => void (await engine.runtime.start(echo, { n: 1 }, { id, tx })),
        });
      const first = await start();
      await engine.runtime.handle(first.runId).result();
      // the run's end must be older than the cut-off (now, to the millisecond)
      await eventually(async () => ((await engine.retention.prune({ runs: 0 }, { pauseMs: 0 }))[0]?.runs ?? 0) > 0);
      expect(await engine.journal.readStream(keyStream('ret', 'k'))).toEqual([]);
      expect(await engine.store.projectionGet({ name: RUN_KEYS, key: first.runId })).toBeUndefined();
      const next = await start();
      expect(next.duplicate).toBe(false);
      expect(next.runId).not.toBe(first.runId);
    } finally {
      await close();
    }
  });
});
