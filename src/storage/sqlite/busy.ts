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
 * Counted from the write's call, or from when the file was first found locked if that is earlier:
 * once a lock has been held this long, a write arriving later gets one try, not a wait of its own.
 * Our own processes (serve and worker on one file) hold it for one transaction at a time.
 */
export const BUSY_DEADLINE_MS = 2000;

const FIRST_PAUSE_MS = 1;
const LONGEST_PAUSE_MS = 50;

/** SQLITE_BUSY and its extended codes (SQLITE_BUSY_RECOVERY, …): the file is locked by another connection for now. */
export function isBusy(error: unknown): boolean {
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
  /** When the file was first found locked, while tries keep finding it so (null once a write got in). */
  private busySince: number | null = null;
  /** When a try last found the file locked. */
  private lockedAt = Number.NEGATIVE_INFINITY;

  constructor(
    readonly lock: Mutex,
    private readonly deadlineMs = BUSY_DEADLINE_MS,
  ) {}

  /**
   * Runs `begin` (BEGIN IMMEDIATE, or a write that commits on its own) holding `lock`, tried again
   * after growing pauses while another process holds the write lock; resolves to the release of
   * the turn. A `begin` that fails otherwise fails at once.
   */
  async write(begin: () => void): Promise<() => void> {
    const start = Date.now();
    // nobody waits for the file: one try, straight to `lock`, as a read goes
    if (this.waiting === 0) {
      const release = await this.lock.acquire();
      // one found it locked meanwhile: in line behind it, not another try that holds the event loop
      if (this.waiting > 0) release();
      else {
        try {
          begin();
          this.busySince = null;
          return release;
        } catch (error) {
          release();
          if (!isBusy(error)) throw error;
          this.foundLocked();
        }
      }
    }
    return this.wait(begin, start);
  }

  /** `write` once the file was found locked: in line behind the writer that waits, if any. */
  private async wait(begin: () => void, start: number): Promise<() => void> {
    this.waiting += 1;
    const doneWriting = await this.writers.acquire();
    try {
      for (let wait = FIRST_PAUSE_MS; ; wait = Math.min(wait * 2, LONGEST_PAUSE_MS)) {
        const deadline = Math.min(start, this.locked() ? this.busySince! : start) + this.deadlineMs;
        // out of time, lined up while a try found the file locked a moment ago: refused without a try of its own
        if (Date.now() >= deadline && start <= this.lockedAt && this.locked()) throw new StoreUnavailableError('busy', 1);
        const release = await this.lock.acquire();
        try {
          begin();
          this.busySince = null;
          this.waiting -= 1;
          return () => {
            release();
            doneWriting();
          };
        } catch (error) {
          release();
          if (!isBusy(error)) throw error;
          if (this.foundLocked() + wait > deadline) throw new StoreUnavailableError('busy', 1, { cause: error });
        }
        await pause(wait);
      }
    } catch (error) {
      this.waiting -= 1;
      doneWriting();
      throw error;
    }
  }

  /** Notes that a try found the file locked; returns when. */
  private foundLocked(): number {
    const now = Date.now();
    if (!this.locked()) this.busySince = now;
    this.lockedAt = now;
    return now;
  }

  /**
   * Whether the file is still locked as a try found it a moment ago: the same lock, as far as
   * anyone can tell. Tries come at most LONGEST_PAUSE_MS apart while someone waits; a lock found
   * after a quiet spell is a new one, and the writes that meet it get their whole wait.
   */
  private locked(): boolean {
    return this.busySince !== null && Date.now() - this.lockedAt <= 2 * LONGEST_PAUSE_MS;
  }
}
