import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { storedWorkflows } from '../dist/app/workflows.js';
import { createEngine, engineStore } from '../dist/engine.js';
import { workflow } from '../dist/runtime/workflow.js';
import { triggers } from '../dist/triggers/service.js';
import { createRunStarter } from '../dist/triggers/starter.js';
import { withDatabase, type Backend } from './databases.js';

export interface EventMatchSizes {
  /** Runs waiting for `payment.received`, each on its own order id. */
  runs: number;
  /** Matching events ingested, each for one waiting run. */
  events: number;
  /** Events ingested per second, paced: the latency of a steady stream, not of a backlog. */
  ratePerS: number;
}

export const EVENT_MATCH_SIZES: EventMatchSizes = { runs: 10_000, events: 1_000, ratePerS: 200 };
/** `--short`: the same shape, a tenth of the runs. */
export const EVENT_MATCH_SHORT: EventMatchSizes = { runs: 1_000, events: 200, ratePerS: 200 };

/**
 * `event_match_p99_ms`: `runs` runs wait on distinct order ids (`waitForEvent('payment.received', { match:
 * 'data.order_id == input.order_id' })`); then `events` events, each matching one of them, are ingested through the
 * triggers' `events.put` at `ratePerS`. Per event, from the call of `put` to the moment its run's wait returned in
 * the run's code (`wait.completed` journaled): the event's commit, the matching subscription (woken by it, one index
 * read, the signal in its transaction), the run's wake-up and its pass. Also `event_match_p50_ms`.
 */
export async function benchEventMatch(database: string, sizes: EventMatchSizes): Promise<Record<string, number>> {
  const resumed = new Map<string, number>();
  const waiting = workflow('bench-await-payment', async (ctx, input: { order_id: string }) => {
    // no timeout: a run waiting without one holds no task, so an empty queue says every run is waiting
    await ctx.waitForEvent('payment.received', { match: 'data.order_id == input.order_id' });
    if (!resumed.has(input.order_id)) resumed.set(input.order_id, performance.now());
  });
  const engine = await createEngine({ database, workflows: [waiting] });
  const store = engineStore(engine);
  const workflows = storedWorkflows(engine, { secretKey: randomBytes(32) });
  const starter = createRunStarter({ engine, store, workflows });
  const service = triggers(engine, store, { starter, schedulerEnabled: false });
  await service.start();
  const put = (order: string) =>
    service.events.put([{ source: 'bench', 'detail-type': 'payment.received', detail: { order_id: order } }]);
  const until = async (what: string, done: () => Promise<boolean> | boolean, ms = 600_000) => {
    const deadline = Date.now() + ms;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`event-match bench: ${what} did not happen within ${ms / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  try {
    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < sizes.runs) await engine.start(waiting, { order_id: `o-${next++}` });
      }),
    );
    // every run's first pass done (each waits), then a probe: once it resumes, the ordered subscription has
    // indexed every wait journaled before it
    await until('the runs waiting', async () => {
      const { tasks } = await store.status();
      return tasks.ready + tasks.running === 0;
    });
    await engine.start(waiting, { order_id: 'probe' });
    await until('the probe run waiting', async () => {
      const { tasks } = await store.status();
      return tasks.ready + tasks.running === 0;
    });
    await put('probe');
    await until('the probe resumed', () => resumed.has('probe'));
    // events for runs spread over the whole index, in a shuffled order
    const orders = Array.from({ length: sizes.events }, (_, i) => `o-${Math.floor((i * sizes.runs) / sizes.events)}`);
    orders.sort(() => Math.random() - 0.5);
    const ingested = new Map<string, number>();
    const puts: Promise<unknown>[] = [];
    const started = performance.now();
    for (const [i, order] of orders.entries()) {
      const due = started + (i * 1000) / sizes.ratePerS;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      ingested.set(order, performance.now());
      puts.push(put(order));
    }
    await Promise.all(puts);
    await until(`${sizes.events} runs resumed`, () => orders.every((o) => resumed.has(o)), 120_000);
    const latencies = orders.map((o) => resumed.get(o)! - ingested.get(o)!).sort((a, b) => a - b);
    const at = (q: number) =>
      Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))]! * 100) / 100;
    return { event_match_p50_ms: at(0.5), event_match_p99_ms: at(0.99) };
  } finally {
    await service.stop();
    await engine.close();
  }
}

// `npx tsx bench/event-match.ts [sqlite|postgres] [--short]`: this bench alone (after `tsc -p tsconfig.build.json`)
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const backend = (process.argv[2] ?? 'sqlite') as Backend;
  const sizes = process.argv.includes('--short') ? EVENT_MATCH_SHORT : EVENT_MATCH_SIZES;
  const result = await withDatabase(backend, (database) => benchEventMatch(database, sizes));
  console.log(JSON.stringify({ backend, ...sizes, ...result }));
}
