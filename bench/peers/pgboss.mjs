// pg-boss benchmark: node pgboss.mjs [jobs=20000] [latencySamples=300]
import PgBoss from 'pg-boss';
import pg from 'pg';
import { SIZE, withFreshDb, now, round, chunks, waitUntil, latencyRun, versionOf } from './common.mjs';

const BATCH = Number(process.env.PGBOSS_BATCH ?? 10); // jobs fetched (and run together) per poll
const POLL_S = 0.5; // pg-boss minimum pollingIntervalSeconds

await withFreshDb('pgboss', async (url) => {
  const boss = new PgBoss({ connectionString: url });
  boss.on('error', (e) => console.error('pg-boss error:', e.message));
  await boss.start();
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  const completed = async (q) =>
    Number(
      (await probe.query(`select count(*) from pgboss.job where name = $1 and state = 'completed'`, [q])).rows[0].count,
    );
  try {
    // 1. bulk enqueue: boss.insert() with 5,000 jobs per call
    const q = 'drain';
    await boss.createQueue(q);
    let t = now();
    for (const n of chunks(SIZE)) await boss.insert(Array.from({ length: n }, () => ({ name: q, data: {} })));
    const bulk_enqueue_per_s = SIZE / ((now() - t) / 1000);

    // 2. drain: one work() with batchSize 10 (10 jobs handled at once), min polling interval.
    //    pg-boss completes a batch after the handler resolves (not awaited by the worker
    //    loop), so the end is when the database shows all jobs in state 'completed'.
    let handled = 0;
    t = now();
    const wid = await boss.work(q, { batchSize: BATCH, pollingIntervalSeconds: POLL_S }, async (jobs) => {
      handled += jobs.length;
    });
    await waitUntil(() => handled >= SIZE, 5);
    const tEnd = await waitUntil(async () => (await completed(q)) >= SIZE, 5);
    const drain_per_s = SIZE / ((tEnd - t) / 1000);
    await boss.offWork({ id: wid });

    // 3. latency: idle worker (same settings), one boss.send() every 20 ms
    const lq = 'latency';
    await boss.createQueue(lq);
    const samples = new Map();
    await boss.work(lq, { batchSize: BATCH, pollingIntervalSeconds: POLL_S }, async (jobs) => {
      const tn = now();
      for (const j of jobs) samples.set(j.data.i, tn - j.data.t);
    });
    const lat = await latencyRun((d) => boss.send(lq, d), samples);

    console.log(
      JSON.stringify({
        lib: 'pg-boss',
        version: versionOf('pg-boss'),
        jobs: SIZE,
        batchSize: BATCH,
        pollingIntervalSeconds: POLL_S,
        bulk_enqueue_per_s: round(bulk_enqueue_per_s),
        drain_per_s: round(drain_per_s),
        ...lat,
      }),
    );
  } finally {
    await probe.end();
    await boss.stop({ graceful: false, wait: true, timeout: 2000 });
  }
});
