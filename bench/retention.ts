// Retention under a steady load: `npx tsx bench/retention.ts [--events 1000000] [--only sqlite|postgres]`.
// Rounds of finished runs (50 events each) are appended and then pruned, with a subscriber following
// the journal throughout; prints per backend the events written, append and prune rates, and the
// size of the database after each round (SQLite: file + WAL; PostgreSQL: the tables and indexes).
// The size after the last round should be the size after the first few: the database stops growing.
import { statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createEngine, type Engine, engineStore } from '../dist/engine.js';
import type { StreamAppend } from '../dist/storage/store.js';
import { withDatabase, type Backend } from './databases.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    only: { type: 'string' },
    rounds: { type: 'string', default: '20' },
  },
});
const EVENTS_PER_RUN = 50;
const total = Number(values.events);
const rounds = Number(values.rounds);
const runsPerRound = Math.max(1, Math.round(total / rounds / EVENTS_PER_RUN));

async function size(engine: Engine, database: string): Promise<number> {
  if (engineStore(engine).dialect === 'sqlite')
    return statSync(database).size + (statSync(`${database}-wal`, { throwIfNoEntry: false })?.size ?? 0);
  const client = new pg.Client({ connectionString: database });
  await client.connect();
  try {
    const { rows } = await client.query<{ bytes: string }>(
      `SELECT sum(pg_total_relation_size(c.oid))::bigint AS bytes FROM pg_class c WHERE c.relname IN ('events', 'streams', 'projections', 'tasks', 'append_keys')`,
    );
    return Number(rows[0]!.bytes);
  } finally {
    await client.end();
  }
}

async function bench(backend: Backend, database: string): Promise<void> {
  const engine = await createEngine({ database, workers: false });
  try {
    let seen = 0;
    await engine.subscribe('follower', { streamPrefix: 'audit:', batchSize: 1000 }, async () => void (seen += 1));
    let written = 0;
    let appendMs = 0;
    let pruneMs = 0;
    const sizes: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const t0 = performance.now();
      for (let at = 0; at < runsPerRound; at += 20) {
        const appends: StreamAppend[] = [];
        for (let i = at; i < Math.min(runsPerRound, at + 20); i++) {
          const values = Array.from({ length: EVENTS_PER_RUN - 2 }, (_, seq) => ({
            type: 'value.recorded',
            data: { seq: seq + 1, name: 'random', value: seq },
          }));
          appends.push({
            streamId: `run:bench-${round}-${i}`,
            events: [
              {
                type: 'run.started',
                data: { workflow: 'bench', input: null, orderingKey: null, deadline: null, parent: null },
              },
              ...values,
              { type: 'run.completed', data: { output: null } },
            ],
          });
          written += EVENTS_PER_RUN;
        }
        appends.push({ streamId: `audit:${round}-${at}`, events: [{ type: 'audit', data: at }] });
        await engine.journal.appendMany(appends);
      }
      const t1 = performance.now();
      await engine.retention.prune({ runs: 0 }, { batchSize: 200, pauseMs: 0 });
      const t2 = performance.now();
      appendMs += t1 - t0;
      pruneMs += t2 - t1;
      sizes.push(await size(engine, database));
      console.error(
        `  ${backend} round ${round + 1}/${rounds}: ${written} events written, ${(sizes.at(-1)! / 1e6).toFixed(1)} MB`,
      );
    }
    const audits = rounds * Math.ceil(runsPerRound / 20);
    for (const deadline = Date.now() + 30_000; seen < audits && Date.now() < deadline; )
      await new Promise((resolve) => setTimeout(resolve, 50));
    const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
    console.log(
      `${backend}: ${written} events in ${rounds} rounds; append ${Math.round(written / (appendMs / 1000))} events/s, prune ${Math.round(written / (pruneMs / 1000))} events/s; size after round 1 ${mb(sizes[0]!)}, round ${Math.min(3, rounds)} ${mb(sizes[Math.min(2, rounds - 1)]!)}, last ${mb(sizes.at(-1)!)}; events left ${(await engineStore(engine).status()).events}; subscriber saw ${seen} of ${audits}`,
    );
  } finally {
    await engine.close();
  }
}

for (const backend of ['sqlite', 'postgres'] as Backend[]) {
  if (values.only && values.only !== backend) continue;
  await withDatabase(backend, (database) => bench(backend, database));
}
