import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../engine.js';
import { CancelledError, LeaseLostError } from '../errors.js';
import type { Task } from '../storage/store.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import type { TaskContext } from './handler.js';

const newest = { concurrency: { key: 'chat:1', limit: 1, onLimit: 'cancel_in_progress' as const } };

/** A task's history, by event type. */
const history = async (engine: Engine, id: string) => (await engine.queue.history(id)).map((e) => e.type);

describe.each(backends)('cancel_in_progress stops a running task on $name', (backend) => {
  let engine: Engine;
  let second: () => Promise<Engine>;
  let close: () => Promise<void>;
  beforeEach(async () => ({ engine, second, close } = await testEngine(backend)));
  afterEach(() => close());

  /**
   * A handler that waits for its signal when its payload says so, then returns anyway (a late completion); each start
   * checks that the store runs no more of the key than its limit, and records what it saw.
   */
  const recording = (on: () => Engine) => {
    const started: number[] = [];
    const aborted = new Map<number, unknown>();
    const running: string[][] = [];
    const handler = async (payload: { n: number; wait?: boolean }, { signal }: TaskContext) => {
      running.push((await on().queue.list({ queue: 'chat', state: 'running' })).map((t) => t.id));
      started.push(payload.n);
      if (payload.wait) await new Promise((done) => signal.addEventListener('abort', done));
      if (signal.aborted) aborted.set(payload.n, signal.reason);
      return { n: payload.n };
    };
    return { handler, started, aborted, running };
  };

  it("aborts the running handler's signal at once in this process; its late result is discarded", async () => {
    const r = recording(() => engine);
    const settled: Array<[string, string]> = [];
    const lost: string[] = [];
    engine.events.on('lease:lost', (e) => lost.push(e.id));
    // a lease of a minute: its heartbeat comes in 20 s, so only the enqueue's own word stops it sooner
    engine.work('chat', r.handler, { leaseMs: 60_000, concurrency: 4, onSettled: (t, o) => settled.push([t.id, o]) });
    const { task: first } = await engine.queue.enqueue('chat', { n: 1, wait: true }, newest);
    await eventually(() => r.started.includes(1));
    const { task: next } = await engine.queue.enqueue('chat', { n: 2 }, newest);
    const reason = await eventually(() => r.aborted.get(1));
    expect(reason).toBeInstanceOf(CancelledError);
    expect((reason as Error).message).toContain(`task ${next.id} of concurrency chat:1 is newer`);
    await eventually(() => settled.length === 2);
    expect(Object.fromEntries(settled)).toEqual({ [first.id]: 'lost', [next.id]: 'completed' });
    // cancelled on purpose: no lease reported lost (a warning in the log)
    expect(lost).toEqual([]);
    expect(await engine.queue.get(first.id)).toMatchObject({ state: 'dead', result: null, leaseToken: null });
    expect(await history(engine, first.id)).toEqual(['task.enqueued', 'task.cancelled']);
    expect(await engine.queue.get(next.id)).toMatchObject({ state: 'completed', result: { n: 2 } });
    // each start saw itself alone running: the cancelled one's slot went to the newer, and only once
    expect(r.running).toEqual([[first.id], [next.id]]);
    expect(r.started).toEqual([1, 2]);
  });

  it('aborts a handler running in another engine within its heartbeat; the newer task runs there', async () => {
    const other = await second();
    const r = recording(() => other);
    other.work('chat', r.handler, { leaseMs: 900, concurrency: 4 });
    const { task: first } = await engine.queue.enqueue('chat', { n: 1, wait: true }, newest);
    await eventually(() => r.started.includes(1));
    const { task: next } = await engine.queue.enqueue('chat', { n: 2 }, newest);
    expect(await eventually(() => r.aborted.get(1))).toBeInstanceOf(CancelledError);
    await eventually(async () => (await engine.queue.get(next.id)).state === 'completed');
    expect(await engine.queue.get(first.id)).toMatchObject({ state: 'dead', result: null });
    expect(await history(engine, first.id)).toEqual(['task.enqueued', 'task.cancelled']);
    expect(r.running).toEqual([[first.id], [next.id]]);
  });

  it('discards what a handler throws once aborted: the cancelled task is not retried', async () => {
    const ran: Task[] = [];
    const settled: Array<[string, string]> = [];
    const handler = async (_payload: unknown, { task, signal }: TaskContext) => {
      ran.push(task);
      if (ran.length === 1) await new Promise((done) => signal.addEventListener('abort', done));
      signal.throwIfAborted();
      return null;
    };
    engine.work('chat', handler, { leaseMs: 60_000, onSettled: (t, o) => settled.push([t.id, o]) });
    const { task: first } = await engine.queue.enqueue('chat', 1, newest);
    await eventually(() => ran.length === 1);
    const { task: next } = await engine.queue.enqueue('chat', 2, newest);
    await eventually(() => settled.length === 2);
    expect(Object.fromEntries(settled)).toEqual({ [first.id]: 'lost', [next.id]: 'completed' });
    expect(await engine.queue.get(first.id)).toMatchObject({ state: 'dead', attempts: 1 });
    expect(await history(engine, first.id)).toEqual(['task.enqueued', 'task.cancelled']);
    expect(ran.map((t) => t.id)).toEqual([first.id, next.id]);
  });

  it("tells a worker over HTTP through its heartbeat's lease error; its completion after is refused", async () => {
    const remote = engine.queue.remote({ leaseMs: 30_000, pollMs: 200, maxResultBytes: 1 << 20 });
    const { task: first } = await engine.queue.enqueue('chat', 1, newest);
    const [claimed] = await remote.claim({ queue: 'chat', worker: 'far', max: 1, waitMs: 0 });
    const lease = { id: first.id, leaseToken: claimed!.leaseToken! };
    await engine.queue.enqueue('chat', 2, newest);
    await expect(remote.heartbeat(lease)).rejects.toThrow(LeaseLostError);
    await expect(remote.complete(lease, 'late')).rejects.toThrow('or cancelled');
    expect(await engine.queue.get(first.id)).toMatchObject({ state: 'dead', result: null });
    expect(await history(engine, first.id)).toEqual(['task.enqueued', 'task.cancelled']);
  });
});

const src = resolve(import.meta.dirname, '..');

/**
 * The worker's process: `node --import tsx <file> <database> <leaseMs>`. Prints a line of JSON when it is ready, when a
 * handler starts and when one's signal aborts; a handler of a payload with `wait` waits for its signal, then returns.
 */
const CHILD = `
import { createEngine } from '${src}/engine.js';

const [database, leaseMs] = process.argv.slice(2);
const engine = await createEngine({ database, pollMs: 50 });
const say = (line) => console.log(JSON.stringify(line));
engine.work('chat', async (payload, { signal }) => {
  say({ started: payload.n });
  if (payload.wait) await new Promise((done) => signal.addEventListener('abort', done));
  if (signal.aborted) say({ aborted: payload.n, reason: signal.reason.name });
  return { n: payload.n };
}, { leaseMs: Number(leaseMs), concurrency: 2 });
process.on('SIGTERM', () => void engine.close().then(() => process.exit(0)));
say({ ready: true });
`;

describe.each(backends)('cancel_in_progress with the worker in another process on $name', (backend) => {
  let engine: Engine;
  let proc: ChildProcess;
  let exited: Promise<unknown>;
  let lines: Array<Record<string, unknown>>;
  const said = (key: string, value: unknown) => eventually(() => lines.find((l) => l[key] === value), 20_000);

  /** The worker's process on a fresh database, ready; `engine` on the same database. */
  const start = async (leaseMs: number) => {
    const database = await backend.create();
    engine = await createEngine({ database, pollMs: 200 });
    const file = join(mkdtempSync(join(tmpdir(), 'rl-cancel-')), 'worker.mts');
    writeFileSync(file, CHILD);
    proc = spawn(process.execPath, ['--import', 'tsx', file, database, String(leaseMs)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    exited = new Promise((done) => proc.on('exit', done));
    let stderr = '';
    proc.stderr!.on('data', (chunk) => (stderr += chunk));
    lines = [];
    createInterface({ input: proc.stdout! }).on('line', (line) => lines.push(JSON.parse(line)));
    await said('ready', true).catch((error) => Promise.reject(new Error(`${error}: ${stderr}`)));
  };
  afterEach(async () => {
    proc.kill('SIGTERM');
    await exited;
    await engine.close();
  });

  it('aborts the handler in the worker process, which then runs the newer task once', async () => {
    await start(900);
    const { task: first } = await engine.queue.enqueue('chat', { n: 1, wait: true }, newest);
    await said('started', 1);
    const { task: next } = await engine.queue.enqueue('chat', { n: 2 }, newest);
    expect(await said('aborted', 1)).toEqual({ aborted: 1, reason: 'CancelledError' });
    await eventually(async () => (await engine.queue.get(next.id)).state === 'completed');
    expect(await engine.queue.get(next.id)).toMatchObject({ result: { n: 2 }, attempts: 1 });
    expect(await engine.queue.get(first.id)).toMatchObject({ state: 'dead', result: null });
    expect(await history(engine, first.id)).toEqual(['task.enqueued', 'task.cancelled']);
    expect(lines.filter((l) => 'started' in l)).toEqual([{ started: 1 }, { started: 2 }]);
  });

  it('frees the slot a killed worker held: the newer task runs here, the killed one never again', async () => {
    // a lease of a minute: only the cancellation (or the liveness sweep) gives the slot back in time
    await start(60_000);
    const { task: first } = await engine.queue.enqueue('chat', { n: 1, wait: true }, newest);
    await said('started', 1);
    proc.kill('SIGKILL');
    await exited;
    const { task: next } = await engine.queue.enqueue('chat', { n: 2 }, newest);
    const started: number[] = [];
    engine.work('chat', async (payload: { n: number }) => void started.push(payload.n));
    await eventually(async () => (await engine.queue.get(next.id)).state === 'completed');
    expect(await engine.queue.get(first.id)).toMatchObject({ state: 'dead', result: null });
    // the sweep may have ended its lease first (ready again), then it was cancelled waiting: never run again either way
    expect((await history(engine, first.id)).at(-1)).toBe('task.cancelled');
    expect(started).toEqual([2]);
  });
});
