import type { Store } from '../../storage/store.js';

/**
 * The workflows paused, as this process last read them: a pass checks before each new call, so a
 * paused workflow's running pass starts no new step (the one running finishes) within a poll of
 * the pause. The claim already refuses paused workflows' passes in the database; this covers the
 * passes running when the pause came. Read only while a pass runs.
 */
export class PausedWorkflows {
  private names = new Set<string>();
  private active = 0;
  private timer: NodeJS.Timeout | null = null;
  private readAt = 0;

  constructor(
    private readonly store: Store,
    private readonly pollMs: number,
  ) {}

  has(workflow: string): boolean {
    return this.names.has(workflow);
  }

  /** A pass begins: keep the set fresh while any runs. Returns its end. */
  async hold(): Promise<() => void> {
    this.active += 1;
    if (this.active === 1) {
      // passes that follow each other quickly share one read
      if (Date.now() - this.readAt >= this.pollMs) await this.refresh();
      this.timer = setInterval(() => void this.refresh(), this.pollMs);
      this.timer.unref();
    }
    return () => {
      this.active -= 1;
      if (this.active === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = null;
      }
    };
  }

  private async refresh(): Promise<void> {
    try {
      const pauses = await this.store.pauseList();
      this.readAt = Date.now();
      this.names = new Set(pauses.filter((p) => p.kind === 'workflow').map((p) => p.name));
    } catch {
      // keep the last known set: the claim still holds paused runs back
    }
  }
}
