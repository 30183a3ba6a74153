// BullMQ benchmark: node bullmq.mjs [jobs=20000] [latencySamples=300]
// Uses Redis 127.0.0.1:6379 under a fresh key prefix, deleted at the end.
import { Queue, Worker } from 'bullmq';
import Redis from 'ioredis';
import { SIZE, now, round, chunks, rand, waitUntil, latencyRun, versionOf } from './common.mjs';

const connection = { host: '127.0.0.1', port: 6379, maxRetriesPerRequest: null };
const prefix = `peer_bullmq_${rand()}`;
const redis = new Redis(connection);
const closers = [];

async function deleteKeys() {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}
const onSignal = () => deleteKeys().finally(() => process.exit(130));
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);

try {
  // 1. bulk enqueue: Queue.addBulk() with 5,000 jobs per call (default job options)
  const queue = new Queue('drain', { connection, prefix });
  closers.push(() => queue.close());
  await queue.waitUntilReady();
  let t = now();
  for (const n of chunks(SIZE)) await queue.addBulk(Array.from({ length: n }, () => ({ name: 'noop', data: {} })));
  const bulk_enqueue_per_s = SIZE / ((now() - t) / 1000);

  // 2. drain: one Worker, concurrency 10. 'completed' fires after the job was moved
  //    to the completed set in Redis (moveToFinished), so the count is of stored completions.
  let completed = 0;
  t = now();
  const worker = new Worker('drain', async () => {}, { connection, prefix, concurrency: 10 });
  closers.push(() => worker.close());
  worker.on('completed', () => {
    completed++;
  });
  worker.on('failed', (_j, e) => console.error('failed:', e.message));
  const tEnd = await waitUntil(() => completed >= SIZE, 1);
  const drain_per_s = SIZE / ((tEnd - t) / 1000);

  // 3. latency: an idle Worker (concurrency 10) on its own queue; one Queue.add() every 20 ms
  const lq = new Queue('latency', { connection, prefix });
  closers.push(() => lq.close());
  const samples = new Map();
  const lw = new Worker(
    'latency',
    async (job) => {
      samples.set(job.data.i, now() - job.data.t);
    },
    { connection, prefix, concurrency: 10 },
  );
  closers.push(() => lw.close());
  await lw.waitUntilReady();
  await new Promise((r) => setTimeout(r, 500)); // let the worker reach its blocking wait
  const lat = await latencyRun((d) => lq.add('lat', d), samples);

  const info = await redis.config('GET', 'appendonly');
  console.log(
    JSON.stringify({
      lib: 'bullmq',
      version: versionOf('bullmq'),
      jobs: SIZE,
      concurrency: 10,
      redis_appendonly: info[1],
      bulk_enqueue_per_s: round(bulk_enqueue_per_s),
      drain_per_s: round(drain_per_s),
      ...lat,
    }),
  );
} finally {
  for (const close of closers.reverse()) await close().catch((e) => console.error(e.message));
  await deleteKeys();
  await redis.quit();
}
