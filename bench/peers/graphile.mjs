// graphile-worker benchmark: node graphile.mjs [jobs=20000] [latencySamples=300]
import { run, makeWorkerUtils, Logger } from 'graphile-worker';
import pg from 'pg';
import { SIZE, withFreshDb, now, round, chunks, waitUntil, latencyRun, versionOf } from './common.mjs';

// Keep stdout to the one JSON line: drop info/debug logs (per-job "Completed task ..."),
// keep warnings and errors on stderr.
const logger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(`[graphile-worker ${level}] ${message}`);
});

await withFreshDb('graphile', async (url) => {
  const utils = await makeWorkerUtils({ connectionString: url, logger });
  await utils.migrate();
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  const remaining = async (task) =>
    Number(
      (await probe.query(`select count(*) from graphile_worker.jobs where task_identifier = $1`, [task])).rows[0].count,
    );
  let runner;
  try {
    // 1. bulk enqueue: WorkerUtils.addJobs() with 5,000 job specs per call
    let t = now();
    for (const n of chunks(SIZE))
      await utils.addJobs(Array.from({ length: n }, () => ({ identifier: 'noop', payload: {} })));
    const bulk_enqueue_per_s = SIZE / ((now() - t) / 1000);

    // 2. drain + 3. latency share one runner: concurrency 10, default LISTEN/NOTIFY.
    let handled = 0;
    const samples = new Map();
    const taskList = {
      noop: async () => {
        handled++;
      },
      lat: async (p) => {
        samples.set(p.i, now() - p.t);
      },
    };
    t = now();
    runner = await run({ connectionString: url, concurrency: 10, noHandleSignals: true, logger, taskList });
    await waitUntil(() => handled >= SIZE, 5);
    // graphile-worker deletes a job row once it is complete (completeJob is not awaited
    // by the worker), so the end is when the database holds none of the 'noop' jobs.
    const tEnd = await waitUntil(async () => (await remaining('noop')) === 0, 5);
    const drain_per_s = SIZE / ((tEnd - t) / 1000);

    // 3. latency: the runner is now idle; one addJob() every 20 ms
    const lat = await latencyRun((d) => utils.addJob('lat', d), samples);

    console.log(
      JSON.stringify({
        lib: 'graphile-worker',
        version: versionOf('graphile-worker'),
        jobs: SIZE,
        concurrency: 10,
        bulk_enqueue_per_s: round(bulk_enqueue_per_s),
        drain_per_s: round(drain_per_s),
        ...lat,
      }),
    );
  } finally {
    if (runner) await runner.stop();
    await probe.end();
    await utils.release();
  }
});
