/**
 * An abort signal made when it is first read (a task handler's, a step's): an AbortController
 * costs more than a no-op task (measured, drain: 3% of the process's time), and most handlers
 * never look.
 */
export class LazyAbort {
  private controller: AbortController | null = null;
  private reason: unknown = undefined;
  private aborted = false;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}
