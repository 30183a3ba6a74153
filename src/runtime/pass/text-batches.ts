/** A batch is written this long after the last one began, or at once when it holds this many characters. */
const BATCH_MS = 50;
const BATCH_CHARS = 512;

/**
 * The text a model streams in one attempt, journaled in small batches: one write in flight at a time (each goes
 * through the run's writer, so the group commit carries it with other runs' writes), the next one holding what
 * arrived meanwhile. A model sends a piece every few ms; a write per piece would be a commit per word.
 */
export class TextBatches {
  /** What this attempt added, journaled or not. */
  all = '';
  /** How much of `all` is journaled. */
  written = 0;
  private writing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastStart = 0;
  private failure: { error: unknown } | null = null;
  private sealed = false;

  /** `start`: the answer's length before this attempt; `write(at, text)` journals a batch at offset `at`. */
  constructor(
    private readonly start: number,
    private readonly write: (at: number, text: string) => Promise<void>,
  ) {}

  add(text: string): void {
    if (text === '' || this.sealed) return;
    this.all += text;
    this.schedule();
  }

  /**
   * Writes what is left and waits for it; throws when a write failed. `seal`: text added later is dropped (an attempt
   * that failed: a piece its stream still delivered must not land after the next attempt has begun).
   */
  async drain(seal = false): Promise<void> {
    if (seal) this.sealed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (!this.failure && (this.writing || this.written < this.all.length)) {
      if (this.writing) await this.writing;
      else this.flush();
    }
    if (this.failure) throw this.failure.error;
  }

  private schedule(): void {
    if (this.writing || this.timer || this.failure || this.written === this.all.length) return;
    const wait = this.all.length - this.written >= BATCH_CHARS ? 0 : this.lastStart + BATCH_MS - Date.now();
    if (wait <= 0) {
      this.flush();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush();
    }, wait);
  }

  private flush(): void {
    if (this.writing || this.failure) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const piece = this.all.slice(this.written);
    if (piece === '') return;
    this.lastStart = Date.now();
    this.writing = this.write(this.start + this.written, piece).then(
      () => {
        this.written += piece.length;
        this.writing = null;
        this.schedule();
      },
      (error: unknown) => {
        this.failure = { error };
        this.writing = null;
      },
    );
  }
}
