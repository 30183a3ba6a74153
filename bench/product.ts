import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import Database from 'better-sqlite3';
import pg from 'pg';
import { offlineModel } from '../dist/models/offline.js';
import { SAMPLE } from '../dist/cli/sample.js';
import { createEngine, type Engine } from '../dist/engine.js';
import { assemble, type App } from '../dist/app/assemble.js';

/**
 * The product as `runledger serve` runs it, minus HTTP: the engine with its run workers, and every
 * service with its consumers (trigger routing, schedules, AI replies), with the sample stored
 * workflow (three steps) saved.
 */
export async function startProduct(
  database: string,
): Promise<{ engine: Engine; services: App; workflowId: string; close: () => Promise<void> }> {
  const engine = await createEngine({ database });
  const services = await assemble(engine, {
    secretKey: randomBytes(32),
    allow: [],
    logger: pino({ level: 'silent' }),
    chatModel: offlineModel(),
    workers: true,
  });
  const wf = await services.workflows.definitions.create(SAMPLE);
  return {
    engine,
    services,
    workflowId: wf.id,
    close: async () => {
      await services.stop();
      await engine.close();
    },
  };
}

/**
 * Writes `count` events straight into the journal (and their streams), as a long-running
 * deployment's history would be: task and run events in streams of 10, none of the types the
 * product's subscriptions wait for. One statement per 100,000 rows, so a million takes seconds.
 * Call it before the engine opens the database (it creates the schema by opening a store first).
 */
export async function preloadJournal(database: string, count: number): Promise<void> {
  if (count <= 0) return;
  // the schema first
  const engine = await createEngine({ database, workers: false });
  await engine.close();
  const chunk = 100_000;
  if (!/^postgres(ql)?:\/\//.test(database)) {
    const db = new Database(database);
    try {
      const insert = db.prepare(`WITH RECURSIVE n(i) AS (SELECT @from UNION ALL SELECT i + 1 FROM n WHERE i + 1 < @to)
        INSERT INTO events (stream_id, version, type, data, metadata, idempotency_key, created_at)
        SELECT (CASE i % 2 WHEN 0 THEN 'task:old_' ELSE 'run:old_' END) || (i / 20), (i % 20) / 2 + 1,
          CASE i % 4 WHEN 0 THEN 'task.claimed' WHEN 1 THEN 'step.completed' WHEN 2 THEN 'task.completed' ELSE 'run.started' END,
          '{"attempt":1,"note":"preloaded history"}', '{}', NULL, @now FROM n`);
      const streams = db.prepare(`WITH RECURSIVE n(i) AS (SELECT @from UNION ALL SELECT i + 1 FROM n WHERE i + 1 < @to)
        INSERT INTO streams (stream_id, version) SELECT (CASE i % 2 WHEN 0 THEN 'task:old_' ELSE 'run:old_' END) || (i / 20), 10 FROM n WHERE i % 20 < 2`);
      for (let from = 0; from < count; from += chunk) {
        const to = Math.min(count, from + chunk);
        db.transaction(() => {
          insert.run({ from, to, now: Date.now() });
          streams.run({ from, to });
        })();
      }
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: database });
  await client.connect();
  try {
    for (let from = 0; from < count; from += chunk) {
      const to = Math.min(count, from + chunk) - 1;
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO events (stream_id, version, type, data, metadata, created_at)
         SELECT (CASE i % 2 WHEN 0 THEN 'task:old_' ELSE 'run:old_' END) || (i / 20), (i % 20) / 2 + 1,
           CASE i % 4 WHEN 0 THEN 'task.claimed' WHEN 1 THEN 'step.completed' WHEN 2 THEN 'task.completed' ELSE 'run.started' END,
           '{"attempt":1,"note":"preloaded history"}', '{}', rl_now_ms() FROM generate_series($1::bigint, $2::bigint) AS i`,
        [from, to],
      );
      await client.query(
        `INSERT INTO streams (stream_id, version) SELECT (CASE i % 2 WHEN 0 THEN 'task:old_' ELSE 'run:old_' END) || (i / 20), 10
         FROM generate_series($1::bigint, $2::bigint) AS i WHERE i % 20 < 2`,
        [from, to],
      );
      await client.query('COMMIT');
    }
    await client.query('ANALYZE events');
  } finally {
    await client.end();
  }
}

/** Executions of the sample workflow through the product, `inFlight` at a time; returns executions per second. */
export async function storedThroughput(
  product: { engine: Engine; services: App; workflowId: string },
  executions: number,
  inFlight: number,
): Promise<number> {
  const run = async (i: number) => {
    const { execution_id } = await product.services.workflows.executions.execute(product.workflowId, {
      trigger_data: { name: `user-${i}`, tags: ['a', 'b'] },
    });
    await product.engine.runtime.handle(execution_id).result({ pollMs: 50 });
  };
  for (let i = 0; i < Math.min(5, executions); i++) await run(-i);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < executions) await run(next++);
    }),
  );
  return executions / ((performance.now() - started) / 1000);
}
