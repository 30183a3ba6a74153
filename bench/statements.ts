// Statements per workflow run, per step and per drained task on PostgreSQL: `tsx bench/statements.ts [runs] [inFlight]`.
// Counts every statement the engine's connections send (BEGIN and COMMIT included) while `runs`
// ten-step and one-step runs execute, `inFlight` at a time (the difference is the cost of nine
// steps), then while a worker of concurrency `inFlight` drains 10 × `runs` no-op tasks. Unlike
// throughput on a shared machine, these counts are the same in every session: `npm run bench`
// records them as `statements_per_wf10_run`, `statements_per_wf1_run`, `statements_per_wf1_keyed_run` (a
// 1-step run under a concurrency key of its own) and `statements_per_task`, and the round trips they take as
// `round_trips_per_…` (statements sent behind one in flight ride in it).
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { defineAgent } from '../dist/agents/agent.js';
import { AgentLedger } from '../dist/agents/ledger.js';
import { sessions } from '../dist/agents/service.js';
import { createEngine, engineStore } from '../dist/engine.js';
import { workflow } from '../dist/runtime/workflow.js';
import { withDatabase } from './databases.js';

type Top = Array<[string, number]>;

const steps = (n: number) =>
  workflow(`stmts${n}`, async (ctx) => {
    for (let i = 0; i < n; i++) await ctx.step(`s${i}`, async () => i);
    return n;
  });
const ten = steps(10);
const one = steps(1);
// a 1-step run under a concurrency key of its own (a limit per user no run reaches): what taking and giving back a slot
// costs in statements
const keyedOne = workflow('stmts1keyed', { concurrency: [{ key: 'input.k', limit: 1_000 }] }, async (ctx) =>
  ctx.step('s0', async () => 0),
);

/** What pg keeps of a client's queries (not in its types): none in flight means a new round trip. */
interface Queues {
  _activeQuery: unknown;
  _sentQueryQueue?: unknown[];
  _queryQueue: unknown[];
}

/**
 * Counts the statements every pg client sends while `fn` runs, by text (or prepared name), and the
 * round trips: a statement sent while none of its connection's is in flight starts one, the ones
 * sent behind it (pipelined) ride in it.
 */
export async function counted(fn: () => Promise<void>, top = 14): Promise<Counts> {
  const counts = new Map<string, number>();
  let total = 0;
  let roundTrips = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const q = this as unknown as Queues;
    if (!q._activeQuery && !q._sentQueryQueue?.length && q._queryQueue.length === 0) roundTrips += 1;
    const config = args[0] as string | { text?: string; name?: string };
    const text = typeof config === 'string' ? config : (config.name ?? config.text ?? '?');
    const key = text.replace(/\s+/g, ' ').slice(0, 60);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    total += 1;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
  try {
    await fn();
  } finally {
    pg.Client.prototype.query = query;
  }
  return { total, roundTrips, top: [...counts].sort((a, b) => b[1] - a[1]).slice(0, top) };
}

interface Counts {
  total: number;
  roundTrips: number;
  top: Top;
}

async function measure(database: string, wf: typeof ten, runs: number, inFlight: number): Promise<Counts> {
  const engine = await createEngine({ database, workflows: [ten, one, keyedOne], runConcurrency: inFlight });
  try {
    await engineStore(engine).now();
    let next = 0;
    return await counted(async () => {
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next < runs) {
            const id = `${wf.name}-${next++}`;
            await (await engine.start(wf, { k: id }, { id })).result();
          }
        }),
      );
    });
  } finally {
    await engine.close();
  }
}

/** Statements of draining `tasks` no-op tasks with one worker of concurrency `inFlight`. */
async function drain(database: string, tasks: number, inFlight: number): Promise<Counts> {
  const engine = await createEngine({ database });
  try {
    await engine.queue.enqueueMany(
      'drain',
      Array.from({ length: tasks }, (_, i) => ({ payload: { i } })),
    );
    return await counted(async () => {
      let completed = 0;
      await new Promise<void>((resolve) => {
        engine.work('drain', async () => null, {
          concurrency: inFlight,
          onSettled: (_t, outcome) => outcome === 'completed' && ++completed === tasks && resolve(),
        });
      });
    });
  } finally {
    await engine.close();
  }
}

/**
 * Statements of `events` inbound agent events through the ledger, spread over `conversations`, `inFlight` deliveries at
 * a time, for a no-op ledger agent (as bench/agents.ts), from the first intake to the last run's end.
 */
export async function agentEvents(
  database: string,
  events: number,
  conversations: number,
  inFlight: number,
  top = 14,
): Promise<Counts> {
  const engine = await createEngine({ database });
  try {
    const store = engineStore(engine);
    await store.now();
    const noop = defineAgent('noop', { ledger: {}, background: async () => {} });
    const ledger = new AgentLedger(engine, store, sessions(engine, store, { agents: [noop] }), {
      defaultAgent: 'noop',
    });
    let next = 0;
    const last = new Map<string, string>();
    return await counted(async () => {
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next < events) {
            const i = next++;
            const conversation = `c${i % conversations}`;
            const { run_id } = await ledger.intake({
              conversation_id: conversation,
              user_id: 'bench',
              source: 'bench',
              input_type: 'text',
              payload: { i },
              idempotency_key: `e-${i}`,
            });
            last.set(conversation, run_id);
          }
        }),
      );
      for (const id of last.values()) await engine.runs.wait(id, { timeoutMs: 600_000 });
    }, top);
  } finally {
    await engine.close();
  }
}

export interface StatementCounts {
  statements_per_wf10_run: number;
  statements_per_wf1_run: number;
  statements_per_task: number;
  statements_per_wf1_keyed_run: number;
  round_trips_per_wf10_run: number;
  round_trips_per_wf1_run: number;
  round_trips_per_wf1_keyed_run: number;
  round_trips_per_task: number;
  statements_per_agent_event: number;
  round_trips_per_agent_event: number;
  top: { wf10: Top; wf1: Top; wf1Keyed: Top; task: Top; agent: Top };
}

/** On a fresh PostgreSQL database each: statements per 10-step run, per 1-step run (plain, keyed) and per drained task. */
export async function countStatements(runs = 100, inFlight = 10): Promise<StatementCounts> {
  const a = await withDatabase('postgres', (database) => measure(database, ten, runs, inFlight));
  const b = await withDatabase('postgres', (database) => measure(database, one, runs, inFlight));
  const k = await withDatabase('postgres', (database) => measure(database, keyedOne, runs, inFlight));
  const tasks = runs * 10;
  const d = await withDatabase('postgres', (database) => drain(database, tasks, inFlight));
  // as bench/agents.ts sends them: 16 deliveries at a time, over 100 conversations
  const events = runs * 3;
  const g = await withDatabase('postgres', (database) => agentEvents(database, events, 100, 16));
  return {
    statements_per_wf10_run: a.total / runs,
    statements_per_wf1_run: b.total / runs,
    statements_per_task: d.total / tasks,
    statements_per_wf1_keyed_run: k.total / runs,
    round_trips_per_wf10_run: a.roundTrips / runs,
    round_trips_per_wf1_run: b.roundTrips / runs,
    round_trips_per_wf1_keyed_run: k.roundTrips / runs,
    round_trips_per_task: d.roundTrips / tasks,
    statements_per_agent_event: g.total / events,
    round_trips_per_agent_event: g.roundTrips / events,
    top: {
      wf10: a.top.map(([k, n]) => [k, n / runs]),
      wf1: b.top.map(([k, n]) => [k, n / runs]),
      wf1Keyed: k.top.map(([key, n]) => [key, n / runs]),
      task: d.top.map(([k, n]) => [k, n / tasks]),
      agent: g.top.map(([k, n]) => [k, n / events]),
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  const runs = Number(process.argv[2] ?? 100);
  const inFlight = Number(process.argv[3] ?? 10);
  const c = await countStatements(runs, inFlight);
  console.log(
    `10-step: ${c.statements_per_wf10_run.toFixed(1)} statements/run in ${c.round_trips_per_wf10_run.toFixed(1)} round trips; 1-step: ${c.statements_per_wf1_run.toFixed(1)} in ${c.round_trips_per_wf1_run.toFixed(1)}; per step: ${((c.statements_per_wf10_run - c.statements_per_wf1_run) / 9).toFixed(2)}`,
  );
  for (const [k, n] of c.top.wf10) console.log(`  ${n.toFixed(2)}/run  ${k}`);
  console.log('1-step:');
  for (const [k, n] of c.top.wf1) console.log(`  ${n.toFixed(2)}/run  ${k}`);
  console.log(
    `1-step under a key of its own: ${c.statements_per_wf1_keyed_run.toFixed(1)} statements/run in ${c.round_trips_per_wf1_keyed_run.toFixed(1)} round trips`,
  );
  for (const [k, n] of c.top.wf1Keyed) console.log(`  ${n.toFixed(2)}/run  ${k}`);
  console.log(
    `drain of ${runs * 10} tasks, concurrency ${inFlight}: ${c.statements_per_task.toFixed(2)} statements/task in ${c.round_trips_per_task.toFixed(3)} round trips`,
  );
  for (const [k, n] of c.top.task) console.log(`  ${n.toFixed(3)}/task  ${k}`);
  console.log(
    `agent events (no-op ledger agent, 100 conversations, 16 deliveries at a time): ${c.statements_per_agent_event.toFixed(1)} statements/event in ${c.round_trips_per_agent_event.toFixed(1)} round trips`,
  );
  for (const [k, n] of c.top.agent) console.log(`  ${n.toFixed(2)}/event  ${k}`);
}
