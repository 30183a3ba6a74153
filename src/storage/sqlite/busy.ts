import { StoreUnavailableError } from '../../errors.js';
import { Mutex } from './mutex.js';

/**
 * SQLite's own wait for another process's lock, per try (`busy_timeout`). better-sqlite3 waits
 * synchronously: the event loop stands still this long at most, so a lock held elsewhere never
 * stops health checks, reads or timers (at 10 s it froze the whole server while another process
 * held the lock).
 */
export const BUSY_TIMEOUT_MS = 5;

/**
 * How long a write waits, in pauses that leave the event loop free, for the write lock held by
 * another process before it is refused as busy (StoreUnavailableError: 503 with Retry-After).
 * Our own processes (serve and a worker on one file) hold it for one transaction at a time: the
 * longest wait measured between them under load was under a third of this (docs/storage.md).
 */
export const BUSY_DEADLINE_MS = 2000;

const FIRST_PAUSE_MS = 1;
const LONGEST_PAUSE_MS = 50;

/** SQLITE_BUSY and its extended codes (SQLITE_BUSY_RECOVERY, …): the file is locked by another connection for now. */
function isBusy(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Who may use one connection, and when: reads and writes take turns on `lock` (in this process),
 * and a write also waits for the file's write lock (other processes) without holding `lock`
 * meanwhile, so reads go on answering. Once the file is found locked, writers line up behind the
 * one that waits: only it tries, each try costing the event loop up to BUSY_TIMEOUT_MS.
 */
export class Turns {
  private readonly writers = new Mutex();
  /** Writers past their first try: waiting for the file, or lined up behind the one that is. */
  private waiting = 0;

  constructor(
    readonly lock: Mutex,
    private readonly deadlineMs = BUSY_DEADLINE_MS,
  ) {}

  /**
   * Runs `begin` (BEGIN IMMEDIATE, or a write that commits on its own) holding `lock`, tried again
   * after growing pauses while another process holds the write lock, for up to `deadlineMs` from
   * the call; resolves to the release of the turn. A `begin` that fails otherwise fails at once.
   */
  async write(begin: () => void): Promise<() => void> {
    const deadline = Date.now() + this.deadlineMs;
    // nobody waits for the file: one try, straight to `lock`, as a read goes
    if (this.waiting === 0) {
      const release = await this.lock.acquire();
      // one found it locked meanwhile: in line behind it, not another try that holds the event loop
      if (this.waiting > 0) release();
      else {
        try {
          begin();
          return release;
        } catch (error) {
          release();
          if (!isBusy(error)) throw error;
        }
      }
    }
    return this.wait(begin, deadline);
  }

  /** `write` once the file was found locked: in line behind the writer that waits, if any. */
  private async wait(begin: () => void, deadline: number): Promise<() => void> {
    this.waiting += 1;
    const doneWriting = await this.writers.acquire();
    try {
      for (let wait = FIRST_PAUSE_MS; ; wait = Math.min(wait * 2, LONGEST_PAUSE_MS)) {
        const release = await this.lock.acquire();
        try {
          begin();
          this.waiting -= 1;
          return () => {
            release();
            doneWriting();
          };
        } catch (error) {
          release();
          if (!isBusy(error)) throw error;
          if (Date.now() + wait > deadline) throw new StoreUnavailableError('busy', 1, { cause: error });
        }
        await pause(wait);
      }
    } catch (error) {
      this.waiting -= 1;
      doneWriting();
      throw error;
    }
  }
}
