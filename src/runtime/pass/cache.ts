import type { History } from './history.js';

interface Cached {
  from: number;
  history: History;
  events: number;
  /** The pass this history is current for (see `put`). */
  current: object | undefined;
}

/**
 * Replay state of recently active runs, kept by the worker that last ran them: a run's history as
 * of its last pass here (or of its start here), so the next pass reads only the events after it.
 * Bounded by runs and by weight (`events`: the caller counts an event as 1 and a KiB of big values
 * held whole as 1), least recently used out first.
 *
 * Always valid, never trusted blindly: the journal is append-only, so when the run's history moved
 * on elsewhere (another worker ran passes meanwhile) the next pass here reads those events too;
 * a new generation (`continueAsNew`, anywhere) is among them, and the pass starts from it.
 */
export class ReplayCache {
  private readonly runs = new Map<string, Cached>();
  private events = 0;
  hits = 0;
  misses = 0;

  constructor(private readonly limits: { maxRuns: number; maxEvents: number }) {}

  /** The run's cached history and the version its generation starts at; it leaves the cache while its pass runs. */
  take(runId: string): { from: number; history: History; current: object | undefined } | undefined {
    const cached = this.runs.get(runId);
    if (!cached) {
      this.misses += 1;
      return undefined;
    }
    this.drop(runId, cached);
    this.hits += 1;
    return { from: cached.from, history: cached.history, current: cached.current };
  }

  /** `current`: the task of a pass for which nothing after `history` needs reading (its run's start here claimed it). */
  put(runId: string, from: number, history: History, events: number, current?: object): void {
    if (this.limits.maxRuns === 0 || events > this.limits.maxEvents) return;
    const old = this.runs.get(runId);
    if (old) this.drop(runId, old);
    this.runs.set(runId, { from, history, events, current });
    this.events += events;
    for (const [id, cached] of this.runs) {
      if (this.runs.size <= this.limits.maxRuns && this.events <= this.limits.maxEvents) break;
      this.drop(id, cached);
    }
  }

  get size(): number {
    return this.runs.size;
  }

  private drop(runId: string, cached: Cached): void {
    this.runs.delete(runId);
    this.events -= cached.events;
  }
}
