import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Db } from './connection.js';

/**
 * The checkpointer's thread (CommonJS, run from a string: it must load under tsx and from dist
 * alike). A PASSIVE checkpoint copies what the WAL holds into the database file without waiting
 * for a lock, and the writer starts the WAL over at its next commit once all of it is copied.
 * While commits keep coming it goes again at once; when it finds nothing to copy it rests.
 */
const THREAD = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
let timer = null;
const tick = () => {
  let behind = false;
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    behind = r.log > r.checkpointed;
  } catch {}
  timer = setTimeout(tick, behind ? 1 : workerData.restMs);
};
parentPort.on('message', () => {
  clearTimeout(timer);
  db.close();
  parentPort.close();
});
tick();
`;

/** Frames the writer's own checkpoint waits for while the thread runs: only a thread that fell behind (or died) lets it come to that. */
const FALLBACK_FRAMES = 10_000;

/**
 * WAL checkpoints on a thread of their own, so the event loop's commits do not copy pages into the
 * database file (and sync it) every 1,000 frames: measured on 10-step runs, 10 in flight, that
 * copying was 7% of the process's time. Started by a connection's writer once it has written
 * enough to need it (a CLI command never does); its own checkpoint stays as the fallback, at
 * FALLBACK_FRAMES.
 */
export class Checkpointer {
  /** Settles once the thread has ended: stopped, or dead on its own (it could not open the file). */
  private readonly exited: Promise<void>;

  private constructor(private readonly thread: Worker) {
    this.exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
  }

  static start(db: Db, path: string, restMs = 50): Checkpointer {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const thread = new Worker(THREAD, { eval: true, workerData: { driver, path, restMs } });
    thread.unref();
    // a thread that cannot open the file (or dies) leaves checkpoints to the writer, as before
    thread.on('error', () => db.open && db.pragma('wal_autocheckpoint = 1000'));
    db.pragma(`wal_autocheckpoint = ${FALLBACK_FRAMES}`);
    return new Checkpointer(thread);
  }

  /** Ends the thread; its connection closes first, so the writer's close finds the WAL free. */
  async stop(): Promise<void> {
    // held until it has exited: unreferenced, the thread lets a process with nothing else to do end
    // while its caller still waits here (top-level await: exit code 13)
    this.thread.ref();
    this.thread.postMessage('stop');
    await this.exited;
  }
}
