import { toMs, type Duration } from '../duration.js';
import type { ApiError, ClaimedTask, Client } from './client.js';

export interface RemoteWorkerOptions {
  /** The worker's name in the tasks' events (`remote:<worker>`); default `node-<pid>`. */
  worker?: string;
  /** Tasks run at once; each claim asks for the free slots. Default 10. */
  concurrency?: number;
  /** How long a claim waits for a task (≤ 60 s). Default 20 s. */
  wait?: Duration;
  /** The lease of each claim; heartbeats renew it every third of that. Default the server's (30 s). */
  lease?: Duration;
  onError?: (error: unknown) => void;
}

/** Thrown by a handler: the task is not retried (`retryable: false`), it goes to the dead-letter queue. */
const notRetryable = (error: unknown): boolean =>
  (error as { retryable?: unknown })?.retryable === false || (error as Error)?.name === 'TerminalError';

/**
 * A task worker in another process than the server, over the task protocol: claims with a
 * long-poll, heartbeats while the handler runs, completes with its result or fails with its
 * error. A handler whose lease was lost (409) is told through its signal; its outcome is then
 * refused by the server, so another worker's attempt is never overwritten.
 *
 * @example
 * const worker = new RemoteWorker(new Client({ url }), 'email', async (payload) => send(payload), { concurrency: 4 });
 * worker.start(); … await worker.stop();
 */
export class RemoteWorker {
  private readonly running = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private loop: Promise<void> | null = null;
  private readonly leaseMs: number;

  constructor(
    private readonly client: Client,
    readonly queue: string,
    private readonly handler: (payload: any, ctx: { task: ClaimedTask; signal: AbortSignal }) => Promise<unknown>,
    private readonly options: RemoteWorkerOptions = {},
  ) {
    this.leaseMs = toMs(options.lease ?? '30s', 'lease');
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops claiming (a waiting claim is cut short) and lets running tasks finish. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    await Promise.all(this.running);
  }

  private async run(): Promise<void> {
    const concurrency = this.options.concurrency ?? 10;
    const claim = {
      worker: this.options.worker ?? `node-${process.pid}`,
      wait: this.options.wait ?? '20s',
      lease: this.leaseMs,
    };
    while (!this.stopping.signal.aborted) {
      if (this.running.size >= concurrency) {
        await Promise.race(this.running);
        continue;
      }
      let tasks: ClaimedTask[] = [];
      try {
        tasks = await this.client.claimTasks(
          this.queue,
          { ...claim, max: concurrency - this.running.size },
          this.stopping.signal,
        );
      } catch (error) {
        if (this.stopping.signal.aborted) break;
        this.options.onError?.(error);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      for (const task of tasks) {
        const p = this.execute(task).finally(() => this.running.delete(p));
        this.running.add(p);
      }
    }
  }

  private async execute(task: ClaimedTask): Promise<void> {
    const lost = new AbortController();
    const beat = setInterval(() => {
      this.client.heartbeatTask(task.id, task.lease_token, this.leaseMs).catch((error: ApiError) => {
        if (error.status === 409) lost.abort(error);
        else this.options.onError?.(error);
      });
    }, this.leaseMs / 3);
    try {
      let outcome: { result: unknown } | { error: unknown };
      try {
        outcome = { result: await this.handler(task.payload, { task, signal: lost.signal }) };
      } catch (error) {
        outcome = { error };
      }
      clearInterval(beat);
      if ('result' in outcome) await this.client.completeTask(task.id, task.lease_token, outcome.result);
      else
        await this.client.failTask(task.id, task.lease_token, {
          error: String((outcome.error as Error)?.message ?? outcome.error),
          retryable: !notRetryable(outcome.error),
        });
    } catch (error) {
      this.options.onError?.(error);
    } finally {
      clearInterval(beat);
    }
  }
}
