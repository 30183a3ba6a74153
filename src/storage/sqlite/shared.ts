import { resolve } from 'node:path';
import type { NotifyChannel } from '../store.js';
import { parseWakeups } from '../wakeups.js';
import { Turns } from './busy.js';
import { Checkpointer } from './checkpointer.js';
import { openDatabase, Statements, type Db } from './connection.js';
import { Mutex } from './mutex.js';

/** One connection per file per process, shared by every store opened on it; `lock` serializes its users, `turns` takes it for them. */
export interface Shared {
  path: string;
  db: Db;
  statements: Statements;
  lock: Mutex;
  turns: Turns;
  listeners: Listeners;
  users: number;
  /** Write transactions committed, until the checkpointer starts (see `countCommit`). */
  commits: number;
  checkpointer: Checkpointer | null;
}

/** Write transactions of a connection before its checkpoints move to a thread: a short-lived process never starts one. */
const CHECKPOINTER_AFTER = 1000;

/** Counts a committed write transaction; the one that reaches CHECKPOINTER_AFTER starts the connection's checkpointer. */
export function countCommit(shared: Shared): void {
  if (shared.checkpointer || ++shared.commits < CHECKPOINTER_AFTER || shared.path === ':memory:') return;
  shared.checkpointer = Checkpointer.start(shared.db, shared.path);
}

// A second connection to the same file in one process would deadlock: better-sqlite3 waits for
// SQLite's write lock synchronously, so the event loop could never finish the transaction that
// holds it. Stores opened on one file in one process therefore share its connection.
const open = new Map<string, Shared>();

/** The connection to `path`, opened on first use and shared by every store opened on it since. */
export function openShared(path: string, options: { migrate?: boolean }): Shared {
  const key = path === ':memory:' ? null : resolve(path);
  let shared = key === null ? undefined : open.get(key);
  if (!shared) {
    const db = openDatabase(path, options);
    const lock = new Mutex();
    shared = {
      path,
      db,
      statements: new Statements(db),
      lock,
      turns: new Turns(lock),
      listeners: { events: new Set(), tasks: new Set() },
      users: 0,
      commits: 0,
      checkpointer: null,
    };
    if (key !== null) open.set(key, shared);
  }
  shared.users += 1;
  return shared;
}

/** A store on it has closed: the last one closes the connection (and stops its checkpointer). */
export async function closeShared(shared: Shared): Promise<void> {
  if (--shared.users > 0) return;
  const release = await shared.lock.acquire();
  try {
    if (shared.path !== ':memory:') open.delete(resolve(shared.path));
    await shared.checkpointer?.stop();
    if (shared.db.open) shared.db.close();
  } finally {
    release();
  }
}

/**
 * Wake-ups go out in the next turn of the event loop, as PostgreSQL's arrive after the commit: by
 * then the writer has its result (a pass knows the versions it wrote, so its own wake-ups cost
 * no read).
 */
export function announce(listeners: Listeners, pending: Array<[NotifyChannel, Set<string>]>): void {
  setImmediate(() => {
    for (const [channel, payloads] of pending) {
      const callbacks = [...listeners[channel]];
      // parsed once for all listeners (each parsed every payload before: a cost per listener and stream)
      for (const payload of payloads) {
        for (const { stream, version } of parseWakeups(payload)) {
          for (const callback of callbacks) {
            try {
              callback(stream, version);
            } catch {
              // a listener's failure is its caller's; it must not stop the others
            }
          }
        }
      }
    }
  });
}

export type Listeners = Record<NotifyChannel, Set<(stream: string, version?: number) => void>>;
