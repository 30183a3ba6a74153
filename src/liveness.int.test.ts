import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Liveness } from './liveness.js';
import { openStore } from './storage/open.js';
import { leaseHolderPrefix } from './storage/processes.js';
import type { Store } from './storage/store.js';
import { backends } from './testing/backends.js';
import { eventually } from './testing/engine.js';

const bootId = () => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
};

describe.each(backends)('process liveness on $name', (backend) => {
  let store: Store;
  let sweeper: Liveness;
  beforeEach(async () => {
    store = await openStore(await backend.create());
    sweeper = new Liveness(store, { heartbeatMs: 50, sweepMs: 50, staleMs: 400 });
  });
  afterEach(async () => {
    await sweeper.stop();
    await store.close();
  });

  const holdLease = async (processId: string, taskId: string) => {
    await store.taskEnqueue({
      tasks: [
        {
          id: taskId,
          queue: 'q',
          payload: null,
          idempotencyKey: null,
          orderingKey: null,
          runAt: null,
          priority: 0,
          maxAttempts: 5,
        },
      ],
    });
    await store.taskClaim({
      queue: 'q',
      limit: 1,
      leaseMs: 60_000,
      workerId: `${leaseHolderPrefix(processId)}w`,
      leaseToken: `L-${taskId}`,
    });
  };
  const leaseEnded = async (taskId: string) =>
    ((await store.taskGet({ id: taskId })).leaseExpiresAt ?? 0) <= (await store.now());

  it('ends the leases of a process that stops heartbeating, never of one that keeps on', async () => {
    await store.processRegister({ id: 'proc_beating', host: 'another-machine', pid: 1, pidStart: null });
    await store.processRegister({ id: 'proc_stopped', host: 'another-machine', pid: 2, pidStart: null });
    await holdLease('proc_beating', 't-beating');
    await holdLease('proc_stopped', 't-stopped');
    let beating = true;
    const beat = (async () => {
      while (beating) {
        await store.processHeartbeat({ id: 'proc_beating' });
        await sleep(100);
      }
    })();
    try {
      const started = Date.now();
      await sweeper.start();
      await eventually(() => leaseEnded('t-stopped'), 10_000);
      // judged by its heartbeat not changing for staleMs as the sweeper watched it
      expect(Date.now() - started).toBeGreaterThanOrEqual(350);
      await sleep(800);
      expect(await leaseEnded('t-beating')).toBe(false);
      expect((await store.processList()).map((p) => p.id)).toContain('proc_beating');
      expect((await store.processList()).map((p) => p.id)).not.toContain('proc_stopped');
    } finally {
      beating = false;
      await beat;
    }
  });

  it('does not take a process for dead because its heartbeat could not change while the database was away', async () => {
    await store.processRegister({ id: 'proc_other', host: 'another-machine', pid: 3, pidStart: null });
    await holdLease('proc_other', 't-other');
    let down = false;
    const flaky = Object.create(store) as Store;
    flaky.processList = () =>
      down
        ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))
        : store.processList();
    // swept by hand: the timers stay out of the way
    const watcher = new Liveness(flaky, { heartbeatMs: 60_000, sweepMs: 60_000, staleMs: 300 });
    try {
      await watcher.start();
      down = true;
      await expect(watcher.sweep()).rejects.toThrow('ECONNREFUSED');
      await sleep(400);
      down = false;
      await watcher.sweep();
      expect(await leaseEnded('t-other')).toBe(false);
      // it is watched again from the database's return: silent for staleMs more, it is dead
      await sleep(400);
      await watcher.sweep();
      expect(await leaseEnded('t-other')).toBe(true);
    } finally {
      await watcher.stop();
    }
  });

  it("does not take a process for dead because a listing stalled past staleMs (as everyone's heartbeats did)", async () => {
    await store.processRegister({ id: 'proc_stalled', host: 'another-machine', pid: 4, pidStart: null });
    await holdLease('proc_stalled', 't-stalled');
    let stallMs = 0;
    const slow = Object.create(store) as Store;
    slow.processList = async () => {
      await sleep(stallMs);
      return store.processList();
    };
    const watcher = new Liveness(slow, { heartbeatMs: 60_000, sweepMs: 60_000, staleMs: 300 });
    try {
      await watcher.start();
      stallMs = 400;
      await watcher.sweep();
      stallMs = 0;
      await watcher.sweep();
      expect(await leaseEnded('t-stalled')).toBe(false);
      // watched again from the stall's end: silent for staleMs more, it is dead
      await sleep(400);
      await watcher.sweep();
      expect(await leaseEnded('t-stalled')).toBe(true);
    } finally {
      await watcher.stop();
    }
  });

  it("ends at start the leases of this machine's processes whose pid is gone", async () => {
    // a pid that cannot be running: above the kernel's pid_max
    await store.processRegister({ id: 'proc_killed', host: `${hostname()}#${bootId()}`, pid: 2 ** 30, pidStart: '1' });
    await holdLease('proc_killed', 't-killed');
    const stale = new Liveness(store, { heartbeatMs: 60_000, sweepMs: 60_000, staleMs: 60_000 });
    try {
      await stale.start();
      expect(await leaseEnded('t-killed')).toBe(true);
      expect((await store.taskExpire({ limit: 10 })).map((t) => t.id)).toEqual(['t-killed']);
    } finally {
      await stale.stop();
    }
  });
});
