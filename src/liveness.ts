import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { newId } from './ids.js';
import { leaseHolderPrefix, type ProcessInfo, type ProcessesEnded, type ProcessSettings } from './storage/processes.js';
import type { Store } from './storage/store.js';

export interface LivenessOptions {
  /** How often the process row is renewed. Default 1 s. */
  heartbeatMs?: number;
  /** A process whose heartbeat has not changed for this long, as this process watches it, is dead: its leases end. Default 3 s. */
  staleMs?: number;
  /** How often dead processes are looked for. Default 1 s. */
  sweepMs?: number;
  /** After leases of dead processes were ended: expire them now rather than at the next sweep. */
  onEnded?: (ended: ProcessesEnded) => void;
  onError?: (error: unknown) => void;
}

/**
 * This process's liveness in the database, so its leases outlive it by seconds, not by a whole
 * lease. One row per process, its heartbeat renewed every second on the database clock; leases
 * name the process (`leaseHolder()`). Every process sweeps: a process whose heartbeat is older than
 * `staleMs` (crashed, or stopped on another machine) or whose pid is gone on this machine (a
 * previous incarnation killed with -9: ended at once, at start) has its leases ended, and the usual
 * expiry hands its tasks and subscriptions to live processes. A process that was only paused and
 * wakes writes nothing its lease tokens no longer allow.
 *
 * @example const liveness = new Liveness(store, {}); await liveness.start(); worker id: liveness.leaseHolder('worker')
 */
export class Liveness {
  readonly id = newId('proc');
  private readonly options: Required<Omit<LivenessOptions, 'onEnded' | 'onError'>> & LivenessOptions;
  private starting: Promise<void> | null = null;
  private timers: NodeJS.Timeout[] = [];
  private sweeping = false;
  /** Each process's last heartbeat seen, and since when (this process's monotonic clock). */
  private readonly seen = new Map<string, { heartbeatAt: number; since: number }>();
  /** What this process runs steps with (`describe`), kept with its row when it registers again. */
  private settings: ProcessSettings | null = null;

  constructor(
    private readonly store: Store,
    options: LivenessOptions = {},
  ) {
    this.options = { heartbeatMs: 1000, staleMs: 3000, sweepMs: 1000, ...options };
  }

  /** An id for a lease holder of this process (a worker, a subscription owner): it starts with the process's id. */
  leaseHolder(kind: string): string {
    return `${leaseHolderPrefix(this.id)}${newId(kind)}`;
  }

  /** Registers the process, ends the leases of dead ones at once, then heartbeats and sweeps. Idempotent. */
  start(): Promise<void> {
    this.starting ??= (async () => {
      await this.register();
      await this.sweep();
      const { heartbeatMs, sweepMs } = this.options;
      // unref: liveness alone never keeps a process running
      this.timers.push(
        setInterval(() => void this.heartbeat().catch((e) => this.options.onError?.(e)), heartbeatMs).unref(),
      );
      this.timers.push(setInterval(() => void this.sweep().catch((e) => this.options.onError?.(e)), sweepMs).unref());
    })();
    return this.starting;
  }

  /** Records the settings this process runs steps with on its row (see `settingDifferences`), starting it if need be. */
  async describe(settings: ProcessSettings): Promise<void> {
    this.settings = settings;
    await this.start();
    await this.register();
  }

  /** Stops heartbeating and removes the row (call after this process's leases were released). */
  async stop(): Promise<void> {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    if (!this.starting) return;
    await this.starting.catch(() => {});
    this.starting = null;
    await this.store.processExpire({ processes: [{ id: this.id, heartbeatAt: null }] });
  }

  private register(): Promise<void> {
    return this.store.processRegister({ id: this.id, ...thisProcess(), settings: this.settings });
  }

  private async heartbeat(): Promise<void> {
    try {
      // ended by another process while this one was paused: it is alive after all
      if (!(await this.store.processHeartbeat({ id: this.id }))) await this.register();
    } catch (error) {
      // The database took no heartbeat from this process (SQLite: a write lock held elsewhere, reads
      // still answered): none from the others either, so heartbeats seen before say nothing. Without
      // this, a 6 s lock ended 10 live tasks' leases of a worker sharing the file. Watching starts again.
      this.seen.clear();
      throw error;
    }
  }

  /**
   * Ends the processes of this machine whose pid is gone, and those whose heartbeat has not changed
   * for `staleMs` of this process's own monotonic time: no two clocks are compared, so processes
   * whose clocks disagree (SQLite stamps heartbeats with each process's clock) are not taken for dead.
   */
  async sweep(): Promise<ProcessesEnded> {
    if (this.sweeping) return { processes: [], tasks: 0, subscriptions: 0 };
    this.sweeping = true;
    try {
      const here = thisProcess();
      const asked = performance.now();
      const dead: Array<{ id: string; heartbeatAt: number }> = [];
      let listed: ProcessInfo[];
      try {
        listed = await this.store.processList();
      } catch (error) {
        // The database is away: no process can beat meanwhile, so heartbeats seen before it went say
        // nothing once it is back (all would look dead after a 3 s outage). Watching starts again.
        this.seen.clear();
        throw error;
      }
      // Judged over what was surely watched: from the answer a heartbeat was first seen in to this
      // question. A slow answer (a stalled network) may have held other processes' heartbeats up as
      // long: what was seen before it says nothing now.
      const answered = performance.now();
      if (answered - asked > this.options.staleMs / 2) this.seen.clear();
      for (const p of listed) {
        // engines of this very process share its event loop: when this one sweeps, they are not stalled
        if (p.id === this.id || (p.host === here.host && p.pid === here.pid && p.pidStart === here.pidStart)) continue;
        const last = this.seen.get(p.id);
        if (!last || last.heartbeatAt !== p.heartbeatAt)
          this.seen.set(p.id, { heartbeatAt: p.heartbeatAt, since: answered });
        const stale =
          last !== undefined && last.heartbeatAt === p.heartbeatAt && asked - last.since >= this.options.staleMs;
        if (stale || (p.host === here.host && !alive(p))) dead.push({ id: p.id, heartbeatAt: p.heartbeatAt });
      }
      for (const id of this.seen.keys()) if (!listed.some((p) => p.id === id)) this.seen.delete(id);
      if (dead.length === 0) return { processes: [], tasks: 0, subscriptions: 0 };
      const ended = await this.store.processExpire({ processes: dead });
      if (ended.tasks + ended.subscriptions > 0) this.options.onEnded?.(ended);
      return ended;
    } finally {
      this.sweeping = false;
    }
  }
}

/**
 * The machine: its host name and, on Linux, its boot id (so two boots are two machines: pids of
 * the last one mean nothing now). The pid's start time tells a reused pid from the one recorded.
 */
function thisProcess(): { host: string; pid: number; pidStart: string | null } {
  return {
    host: `${hostname()}#${read('/proc/sys/kernel/random/boot_id') ?? ''}`,
    pid: process.pid,
    pidStart: startTime(process.pid),
  };
}

function alive(p: ProcessInfo): boolean {
  try {
    process.kill(p.pid, 0);
  } catch (error) {
    // EPERM: it exists, owned by another user
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const start = startTime(p.pid);
  return p.pidStart === null || start === null || start === p.pidStart;
}

/** Field 22 of /proc/<pid>/stat (after the parenthesised command name, which may hold spaces). */
function startTime(pid: number): string | null {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === null) return null;
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
}

function read(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}
