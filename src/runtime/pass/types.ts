import { describeError } from '../../errors.js';
import type { Journal } from '../../journal/journal.js';
import type { Lease, Store } from '../../storage/store.js';
import type { RunView } from '../read/view.js';
import type { Workflow } from '../workflow.js';
import type { Blobs } from './blobs.js';
import type { History, Seq } from './history.js';
import type { Observe } from './observe.js';

export type Outcome =
  | { kind: 'completed'; output: unknown }
  | { kind: 'continued'; input: unknown; workflow: Workflow | null }
  | { kind: 'failed'; error: unknown }
  | { kind: 'suspended'; wakeAt: number | null };

export interface PassOptions {
  store: Store;
  journal: Journal;
  runId: string;
  /** The run's task lease: every write checks it in its own transaction, so a worker that lost the run writes nothing. */
  lease: Lease;
  leaseMs: number;
  /** Largest step output, serialized: checked when the step returns, not when its completion is written. */
  maxEventBytes: number;
  history: History;
  children: Children;
  /** Where values too big for an event go (see RunWriter). */
  blobs?: Blobs;
  /** True while the run's workflow is paused: a new call waits (the pass ends; the resume runs it). */
  held?: () => boolean;
  /** Step events and spans go here (none when absent). */
  observe?: Observe;
  /** The pass's span: each step attempt's span is its child. */
  traceparent?: string;
  /** The database clock: every timer of the run (sleeps, retries, deadlines, polls) is on it, like leases and task times. */
  clock: { now(): number };
}

/** The pass could not write its journal: it stops at once, and the run's task is tried again. */
export class PassAborted extends Error {
  override name = 'PassAborted';
  constructor(override readonly cause: unknown) {
    super(`the pass stopped: ${describeError(cause)}`);
  }
}

/** What a pass needs of the runtime to start and watch child runs. */
export interface Children {
  start(tx: Store, workflow: Workflow, input: unknown, id: string, parent: { runId: string; seq: Seq }): Promise<void>;
  view(id: string): Promise<RunView | undefined>;
}
