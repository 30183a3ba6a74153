// The runledger benchmark: `npm run bench` (both backends), `npm run bench -- --only sqlite|postgres`.
// PostgreSQL: the local server at 127.0.0.1:5432 with trust auth, or RUNLEDGER_TEST_PG_URL; each backend
// runs on a fresh database, the workflow runs and the chat (a `runledger serve` child process) on others. Prints a table and writes
// bench/results/latest.json. About 2½ minutes for both, a third of it PostgreSQL's workflow runs, plus
// journal_growth_ratio (bench/growth.ts: `--growth-events N` sets the history it preloads, default 1M).
// Every bench measures the build in dist/, the code users run (`npm run bench` builds it first; a
// bench run alone with tsx measures whatever dist/ holds): the same code as tsx transpiles it ran
// 10-step runs on SQLite ~13% slower (968, 977 against 1,103, 1,118/s, interleaved).
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createEngine, engineStore } from '../dist/engine.js';
import { postgresVersion, withDatabase, type Backend } from './databases.js';
import { machineReference } from './machine.js';
import { countStatements } from './statements.js';
import { costKeys, measureDbCost } from './db-cost.js';
import { benchAgents, type AgentSizes } from './agents.js';
import { benchChat, type ChatSizes } from './chat.js';
import { benchStored } from './stored.js';
import { benchGrowth, GROWTH_SIZES } from './growth.js';
import { appendBatch, appendConcurrent, appendSequential } from './journal.js';
import { enqueueLatency } from './latency.js';
import { latencyUnderLoad } from './neighbour.js';
import { bulkEnqueue, drain } from './queue.js';
import { formatTable, rounded, type Results } from './table.js';
import { benchWorkflows, type WorkflowSizes } from './workflows.js';
import { benchWake, type WakeSizes } from './wake.js';
import { benchLongSteps, LONG_STEPS } from './long-steps.js';
import { benchFunctions } from './functions.js';
import { benchEventMatch, EVENT_MATCH_SHORT, EVENT_MATCH_SIZES } from './event-match.js';
import { benchNotify, type NotifySizes } from './notify.js';
import { benchFlow, FLOW_SHORT, FLOW_SIZES } from './flow.js';
import { benchGenerate, GENERATE_SHORT, GENERATE_SIZES } from './generate.js';
import { benchProcesses } from './processes.js';
import { benchSteady, STEADY_LONG, STEADY_SHORT } from './steady.js';

const SIZES = {
  appends: 5_000,
  appenders: 8,
  batchAppends: 200,
  batchSize: 100,
  tasks: 20_000,
  enqueueChunk: 5_000,
  latencyTasks: 300,
  latencyIntervalMs: 20,
};
const WORKFLOW_SIZES: WorkflowSizes = {
  runs: 1_000,
  inFlight: 10,
  budgetMs: 60_000,
  sequentialRuns: 50,
  warmup: 5,
  wideInFlight: 100,
};
const STORED_EXECUTIONS = 500;
/** 10-step runs per measurement of worker processes (`wf10_<n>proc_per_s`, bench/processes.ts), for 1, 2 and 4. */
const PROCESS_RUNS = 2_000;
const PROCESS_COUNTS = [1, 2, 4] as const;
/** Runs of the 10-step function and of the 10-step TypeScript workflow each, one at a time (bench/functions.ts). */
const FUNCTION_RUNS = 100;
/** Runs failed, each delivered to a loopback webhook, 10 at a time (bench/notify.ts). */
const NOTIFY_SIZES: NotifySizes = { runs: 200, inFlight: 10 };
const AGENT_SIZES: AgentSizes = { events: 1_000, conversations: 100, posters: 16, idle: 50 };
const WAKE_SIZES: WakeSizes = { events: 10_000, wakes: 20 };
const CHAT_SIZES: ChatSizes = {
  channels: 10,
  clientsPerChannel: 10,
  ratePerS: 1000,
  seconds: 5,
  warmup: 200,
  ingestSeconds: 5,
  ingestConcurrency: 16,
  idleSeconds: 5,
};

async function benchBackend(backend: Backend, database: string): Promise<Record<string, number>> {
  const engine = await createEngine({ database });
  try {
    const m: Record<string, number> = {};
    const step = async (name: string, run: () => Promise<number>) => {
      const started = performance.now();
      m[name] = await run();
      console.error(
        `  ${backend} ${name}: ${Math.round(m[name]!)} (${((performance.now() - started) / 1000).toFixed(1)} s)`,
      );
    };
    await step('append_per_s', () => appendSequential(engine, SIZES.appends));
    await step('append_concurrent_per_s', () => appendConcurrent(engine, SIZES.appends, SIZES.appenders));
    await step('append_batch_per_s', () => appendBatch(engine, SIZES.batchAppends, SIZES.batchSize));
    await step('bulk_enqueue_per_s', () => bulkEnqueue(engine, 'drain1', SIZES.tasks, SIZES.enqueueChunk));
    await step('drain_per_s', () => drain(database, 'drain1', SIZES.tasks, 1));
    await bulkEnqueue(engine, 'drain2', SIZES.tasks, SIZES.enqueueChunk);
    await step('drain_2proc_per_s', () => drain(database, 'drain2', SIZES.tasks, 2));
    await bulkEnqueue(engine, 'drain3', SIZES.tasks, SIZES.enqueueChunk);
    await step('drain_c50_per_s', () => drain(database, 'drain3', SIZES.tasks, 1, 50));
    const status = await engineStore(engine).status();
    if (status.tasks.completed !== 3 * SIZES.tasks || status.tasks.ready + status.tasks.running !== 0) {
      throw new Error(
        `after the drains, expected ${3 * SIZES.tasks} completed tasks, found ${JSON.stringify(status.tasks)}`,
      );
    }
    await step('http_worker_drain_per_s', async () =>
      (await import('./http-drain.js')).httpDrain(engine, database, SIZES.tasks),
    );
    const latency = await enqueueLatency(engine, 'latency', SIZES.latencyTasks, SIZES.latencyIntervalMs);
    Object.assign(m, {
      latency_p50_ms: latency.p50,
      latency_p95_ms: latency.p95,
      latency_p99_ms: latency.p99,
      pickup_p50_ms: latency.pickup_p50,
      pickup_p99_ms: latency.pickup_p99,
    });
    // the same with a neighbour in this process draining at half what one worker process drains
    const loaded = await latencyUnderLoad(engine, m.drain_per_s! / 2, SIZES.latencyTasks, SIZES.latencyIntervalMs);
    Object.assign(m, {
      latency_p50_under_load_ms: loaded.p50,
      latency_p99_under_load_ms: loaded.p99,
      neighbour_per_s: loaded.neighbour_per_s,
    });
    console.error(
      `  ${backend} latency_p99_under_load_ms: ${loaded.p99.toFixed(2)} (neighbour at ${Math.round(loaded.neighbour_per_s)}/s of ${Math.round(m.drain_per_s! / 2)})`,
    );
    return rounded(m);
  } finally {
    await engine.close();
  }
}

const { values } = parseArgs({
  options: { only: { type: 'string' }, 'growth-events': { type: 'string' }, long: { type: 'boolean' } },
});
/** 10,000 waiting runs and 1,000 events with --long (the size); a tenth of the runs otherwise. */
const eventMatchSizes = values.long ? EVENT_MATCH_SIZES : EVENT_MATCH_SHORT;
/** Flow control (issue 40): 10,000 waiting runs and 30 s of rate limit with --long; 1,000 and 10 s otherwise. */
const flowSizes = values.long ? FLOW_SIZES : FLOW_SHORT;
/** ctx.generate (issue 46): 100 generations for 30 s and 5 kills of serve with --long; 5 s and 2 kills otherwise. */
const generateSizes = values.long ? GENERATE_SIZES : GENERATE_SHORT;
/** Steady state (issue 48): 10,000 stored executions and 100,000 code runs at once with --long; a fifth otherwise. */
const steadySizes = values.long ? STEADY_LONG : STEADY_SHORT;
const growthSizes = {
  ...GROWTH_SIZES,
  ...(values['growth-events'] ? { events: Number(values['growth-events']) } : {}),
};
if (values.only !== undefined && values.only !== 'sqlite' && values.only !== 'postgres')
  throw new Error('--only must be sqlite or postgres');
const backends: Backend[] = values.only ? [values.only] : ['sqlite', 'postgres'];

/** Per backend, the runs each concurrent workflow measurement finished: fewer than `runs` when its budget ran out. */
const workflowRuns: Record<string, { wf10: number; wf1: number; wf10_100: number }> = {};
const cpu = cpus();
const sizes = {
  ...SIZES,
  workflows: { ...WORKFLOW_SIZES, used: workflowRuns },
  storedExecutions: STORED_EXECUTIONS,
  chat: CHAT_SIZES,
  agents: AGENT_SIZES,
  growth: growthSizes,
  wake: WAKE_SIZES,
  longSteps: LONG_STEPS,
  functionRuns: FUNCTION_RUNS,
  flow: flowSizes,
  generate: generateSizes,
  processes: { runs: PROCESS_RUNS, counts: PROCESS_COUNTS },
  steady: steadySizes,
};
const meta: Record<string, unknown> = {
  date: new Date().toISOString(),
  node: process.version,
  cpu_model: cpu[0]?.model ?? 'unknown',
  cpu_count: cpu.length,
  sizes,
};
if (backends.includes('postgres')) meta.postgres_version = await postgresVersion();
meta.machine = machineReference();
console.error(`  machine: ${JSON.stringify(meta.machine)}`);

const results: Results = {};
for (const backend of backends) {
  const queue = await withDatabase(backend, (database) => benchBackend(backend, database));
  const workflows = await withDatabase(backend, (database) =>
    benchWorkflows(database, WORKFLOW_SIZES, (line) => console.error(`  ${backend} ${line}`)),
  );
  workflowRuns[backend] = workflows.runs;
  const stored = await withDatabase(backend, (database) => benchStored(database, STORED_EXECUTIONS, 10));
  console.error(`  ${backend} stored_exec_per_s: ${Math.round(stored.stored_exec_per_s!)}`);
  const chat = await withDatabase(backend, (database) =>
    benchChat(database, CHAT_SIZES, (line) => console.error(`  ${backend} ${line}`)),
  );
  const agents = await withDatabase(backend, (database) => benchAgents(database, AGENT_SIZES));
  console.error(`  ${backend} agent_events_per_s: ${Math.round(agents.agent_events_per_s!)}`);
  const growth = await benchGrowth(backend, growthSizes, (line) => console.error(`  ${backend} ${line}`));
  const wake = {
    wake_10k_history_ms: await withDatabase(backend, (database) => benchWake(database, WAKE_SIZES, true)),
    wake_10k_history_nocache_ms: await withDatabase(backend, (database) => benchWake(database, WAKE_SIZES, false)),
  };
  console.error(
    `  ${backend} wake_10k_history_ms: ${wake.wake_10k_history_ms.toFixed(1)} (no cache: ${wake.wake_10k_history_nocache_ms.toFixed(1)})`,
  );
  const longSteps = await withDatabase(backend, (database) => benchLongSteps(database));
  console.error(
    `  ${backend} a ${LONG_STEPS.steps}-step run: ${longSteps.long_run_first_steps_ms.toFixed(2)} ms per step at its start, ${longSteps.long_run_last_steps_ms.toFixed(2)} at its end`,
  );
  const functions = await withDatabase(backend, (database) => benchFunctions(database, FUNCTION_RUNS));
  console.error(
    `  ${backend} a function's step over HTTP: +${functions.http_function_step_p50_ms.toFixed(2)} ms (p50), +${functions.http_function_step_p99_ms.toFixed(2)} ms (p99)`,
  );
  const eventMatch = await withDatabase(backend, (database) => benchEventMatch(database, eventMatchSizes));
  console.error(
    `  ${backend} event_match_p99_ms: ${eventMatch.event_match_p99_ms!.toFixed(1)} (p50 ${eventMatch.event_match_p50_ms!.toFixed(1)})`,
  );
  const notify = await withDatabase(backend, (database) => benchNotify(database, NOTIFY_SIZES));
  console.error(`  ${backend} notify_delivery_p99_ms: ${notify.notify_delivery_p99_ms!.toFixed(1)}`);
  const flow = await benchFlow(backend, flowSizes, (line) => console.error(`  ${backend} ${line}`));
  const generate = await benchGenerate(backend, generateSizes, (line) => console.error(`  ${backend} ${line}`));
  const processes = await benchProcesses(backend, PROCESS_RUNS, PROCESS_COUNTS, (line) =>
    console.error(`  ${backend} ${line}`),
  );
  const steady = await benchSteady(backend, steadySizes, (line) => console.error(`  ${backend} ${line}`));
  results[backend] = {
    ...queue,
    ...rounded(workflows.metrics),
    ...rounded(stored),
    ...rounded(chat),
    ...rounded(agents),
    journal_growth_ratio: Math.round(growth.journal_growth_ratio! * 100) / 100,
    ...rounded(wake),
    ...rounded(longSteps),
    ...rounded(functions),
    ...rounded(eventMatch),
    ...rounded(notify),
    ...flow,
    ...rounded(generate),
    ...rounded(processes),
    ...steady,
  };
}
if (backends.includes('postgres')) {
  // the same in every session, however fast the machine is today
  const c = await countStatements();
  const tenth = (n: number) => Math.round(n * 10) / 10;
  const hundredth = (n: number) => Math.round(n * 100) / 100;
  Object.assign(results.postgres!, {
    statements_per_wf10_run: tenth(c.statements_per_wf10_run),
    statements_per_wf1_run: tenth(c.statements_per_wf1_run),
    statements_per_task: hundredth(c.statements_per_task),
    statements_per_wf1_keyed_run: tenth(c.statements_per_wf1_keyed_run),
    round_trips_per_wf1_keyed_run: tenth(c.round_trips_per_wf1_keyed_run),
    round_trips_per_wf10_run: tenth(c.round_trips_per_wf10_run),
    round_trips_per_wf1_run: tenth(c.round_trips_per_wf1_run),
    round_trips_per_task: hundredth(c.round_trips_per_task),
    statements_per_agent_event: tenth(c.statements_per_agent_event),
    round_trips_per_agent_event: tenth(c.round_trips_per_agent_event),
  });
  // WAL bytes and server CPU per run, step, task and event, on a cluster of its own (docs/scaling.md)
  Object.assign(results.postgres!, costKeys(await measureDbCost()));
}

const out = fileURLToPath(new URL('./results/latest.json', import.meta.url));
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify({ ...results, meta }, null, 2)}\n`);
console.log(formatTable(results, backends));
for (const [backend, used] of Object.entries(workflowRuns)) {
  if (used.wf10 < WORKFLOW_SIZES.runs || used.wf1 < WORKFLOW_SIZES.runs || used.wf10_100 < WORKFLOW_SIZES.runs) {
    console.log(
      `${backend}: the ${WORKFLOW_SIZES.budgetMs / 1000} s budget ran out: ${used.wf10} 10-step, ${used.wf10_100} 10-step (${WORKFLOW_SIZES.wideInFlight} in flight) and ${used.wf1} 1-step runs measured, not ${WORKFLOW_SIZES.runs}`,
    );
  }
}
console.log(
  `\n${meta.date} · Node ${meta.node} · ${cpu.length} × ${meta.cpu_model} · written to bench/results/latest.json`,
);
