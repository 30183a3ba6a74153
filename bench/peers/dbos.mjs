// DBOS Transact benchmark: node dbos.mjs [runs=1000] [sequentialRuns=100]
// The DBOS system database is a fresh PostgreSQL database, dropped at the end.
import { DBOS } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import { withFreshDb, now, round, pct, versionOf } from './common.mjs';

const RUNS = Number(process.argv[2] ?? 1000);
const SEQ = Number(process.argv[3] ?? 100);
const IN_FLIGHT = 10;
const WARMUP = 10;

// One registered step (default config: checkpointed, no retries) returning its index.
const noopStep = DBOS.registerStep(async (i) => i, { name: 'noopStep' });
const wf1 = DBOS.registerWorkflow(async () => noopStep(0), { name: 'wf1' });
const wf10 = DBOS.registerWorkflow(
  async () => {
    let sum = 0;
    for (let i = 0; i < 10; i++) sum += await noopStep(i);
    return sum;
  },
  { name: 'wf10' },
);

// RUNS workflow runs, IN_FLIGHT loops each awaiting its run's result before the next.
async function throughput(wf, runs) {
  let next = 0;
  const t = now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < runs) {
        next++;
        await wf();
      }
    }),
  );
  return runs / ((now() - t) / 1000);
}

async function sequentialP50(wf, runs) {
  const d = [];
  for (let i = 0; i < runs; i++) {
    const t = now();
    await wf();
    d.push(now() - t);
  }
  return round(pct(d, 50), 2);
}

await withFreshDb('dbos', async (url) => {
  DBOS.setConfig({ name: 'peer-bench', systemDatabaseUrl: url, logLevel: 'error' });
  await DBOS.launch();
  try {
    for (let i = 0; i < WARMUP; i++) {
      await wf1();
      await wf10();
    }
    const wf10_per_s = await throughput(wf10, RUNS);
    const wf1_per_s = await throughput(wf1, RUNS);
    const wf1_seq_p50_ms = await sequentialP50(wf1, SEQ);
    const wf10_seq_p50_ms = await sequentialP50(wf10, SEQ);
    // sanity check: every step and every workflow result was recorded in the system database
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const q = async (sql) => Number((await c.query(sql)).rows[0].n);
    const steps_checkpointed = await q('select count(*) n from dbos.operation_outputs');
    const workflows_succeeded = await q(`select count(*) n from dbos.workflow_status where status = 'SUCCESS'`);
    await c.end();
    console.log(
      JSON.stringify({
        lib: 'dbos',
        version: versionOf('@dbos-inc/dbos-sdk'),
        runs: RUNS,
        in_flight: IN_FLIGHT,
        wf10_per_s: round(wf10_per_s),
        wf1_per_s: round(wf1_per_s),
        sequential_runs: SEQ,
        wf1_seq_p50_ms,
        wf10_seq_p50_ms,
        steps_checkpointed,
        workflows_succeeded,
      }),
    );
  } finally {
    await DBOS.shutdown();
  }
});
