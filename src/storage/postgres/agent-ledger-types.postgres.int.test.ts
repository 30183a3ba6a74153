import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  agentEventTransitions,
  agentRunTransitions,
  approvalTransitions,
  toolCallTransitions,
} from '../../agents/ledger-lifecycle.js';
import { createPostgresDatabase } from '../../testing/databases.js';
import type { AgentEventRow, AgentStepStatus, RiskLevel } from '../ledger.js';
import { loadMigrations } from '../migrations.js';
import { openStore } from '../open.js';

/** The first migration with the ledger's views and checks (211 validates the checks). */
const TYPES = 210;

const targets = (table: Record<string, { to: string }>) => Object.values(table).map((t) => t.to);
// Records over the row types' unions: a value added to a union and not here fails the type check.
const STEP: Record<AgentStepStatus, true> = { started: true, ok: true, error: true, skipped: true };
const RISK: Record<RiskLevel, true> = { low: true, medium: true, high: true };
const DECISION: Record<AgentEventRow['decision'], true> = { queued: true, coalesced: true };

/** Each checked column, and the values the code writes to it. */
const WRITTEN: Record<string, string[]> = {
  'agent_events.status': targets(agentEventTransitions),
  'agent_events.decision': Object.keys(DECISION),
  'agent_runs.status': targets(agentRunTransitions),
  'agent_steps.status': Object.keys(STEP),
  'agent_tool_calls.status': targets(toolCallTransitions),
  'agent_tool_calls.risk_level': Object.keys(RISK),
  'agent_tool_calls.approval_status': targets(approvalTransitions),
};

const T0 = Date.UTC(2026, 1, 8, 12, 30, 15, 123);

/** One row of each ledger table, as the code before TYPES wrote them: an intake run and a direct one. */
function ledgerRows(at: number): string[] {
  return [
    `INSERT INTO agent_events (id, conversation_id, user_id, source, input_type, payload, idempotency_key, agent, run_id, decision, status, attempt_count, available_at, created_at, updated_at)
       VALUES ('e1', 'c1', 'u1', 'whatsapp_webhook', 'text', '{}', 'k1', 'a', 'r1', 'queued', 'done', 1, ${at}, ${at}, ${at + 1})`,
    `INSERT INTO agent_runs (id, event_id, conversation_id, user_id, agent, status, input_class, started_at, ended_at, created_at, updated_at)
       VALUES ('r1', 'e1', 'c1', 'u1', 'a', 'success', 'text', ${at + 2}, ${at + 3}, ${at}, ${at + 3})`,
    `INSERT INTO agent_runs (id, agent, status, input_class, created_at, updated_at) VALUES ('r2', 'a', 'pending', 'session', ${at}, ${at})`,
    `INSERT INTO agent_steps (id, run_id, node, seq, attempt, status, created_at, updated_at) VALUES ('s1', 'r1', 'n', 1, 1, 'ok', ${at + 2}, ${at + 3})`,
    `INSERT INTO agent_tool_calls (id, run_id, external_idempotency_key, tool_name, risk_level, input, status, attempts, started_at, ended_at, approval_status, approval_expires_at, decided_at, created_at, updated_at)
       VALUES ('t1', 'r1', 'x1', 'send', 'high', '{}', 'ok', 1, ${at + 4}, ${at + 5}, 'approved', ${at + 6}, ${at + 7}, ${at + 2}, ${at + 5})`,
    `INSERT INTO agent_checkpoints (id, run_id, node, seq, state, created_at) VALUES ('k1', 'r1', 'n', 1, '{}', ${at + 3})`,
  ];
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

/** A database migrated by the store (every migration), with the ledger rows in it. */
async function migrated(): Promise<pg.Client> {
  const url = await createPostgresDatabase();
  await (await openStore(url)).close();
  const client = await connect(url);
  for (const sql of ledgerRows(T0)) await client.query(sql);
  return client;
}

describe('the agent ledger as PostgreSQL column types', () => {
  let db: pg.Client;
  beforeAll(async () => {
    db = await migrated();
  });
  afterAll(async () => {
    await db?.end();
  });

  it('has a view per ledger table with every column, each bigint time column as timestamptz under its name', async () => {
    const { rows } = await db.query<{ table_name: string; column_name: string; data_type: string }>(
      `SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name LIKE 'agent\\_%' ORDER BY table_name, ordinal_position`,
    );
    const tables = [...new Set(rows.map((r) => r.table_name).filter((t) => !t.endsWith('_v')))];
    expect(tables.sort()).toEqual([
      'agent_checkpoints',
      'agent_events',
      'agent_runs',
      'agent_steps',
      'agent_tool_calls',
    ]);
    for (const table of tables) {
      const expected = rows
        .filter((r) => r.table_name === table)
        .map((r) => [
          r.column_name,
          r.data_type === 'bigint' && r.column_name.endsWith('_at') ? 'timestamp with time zone' : r.data_type,
        ]);
      const view = rows.filter((r) => r.table_name === `${table}_v`).map((r) => [r.column_name, r.data_type]);
      expect(view.sort(), `${table}_v`).toEqual(expected.sort());
    }
  });

  it('reads back the instants the ms columns hold, to the millisecond, and null as null', async () => {
    const [event] = (await db.query('SELECT available_at, created_at, updated_at FROM agent_events_v')).rows;
    expect([event.available_at, event.created_at, event.updated_at].map((d: Date) => d.getTime())).toEqual([
      T0,
      T0,
      T0 + 1,
    ]);
    const runs = (await db.query('SELECT id, started_at, ended_at FROM agent_runs_v ORDER BY id')).rows;
    expect(runs.map((r) => [r.id, r.started_at?.getTime() ?? null, r.ended_at?.getTime() ?? null])).toEqual([
      ['r1', T0 + 2, T0 + 3],
      ['r2', null, null],
    ]);
    const [call] = (
      await db.query('SELECT started_at, ended_at, approval_expires_at, decided_at FROM agent_tool_calls_v')
    ).rows;
    expect(Object.values(call).map((d) => (d as Date).getTime())).toEqual([T0 + 4, T0 + 5, T0 + 6, T0 + 7]);
    const { rows } = await db.query(
      `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') AS at FROM agent_checkpoints_v`,
    );
    expect(rows[0].at).toBe('2026-02-08 12:30:15.126');
  });

  it('checks each enumerated column against exactly the values the code writes, validated', async () => {
    const { rows } = await db.query<{ table: string; def: string; validated: boolean }>(
      `SELECT conrelid::regclass::text AS table, pg_get_constraintdef(oid) AS def, convalidated AS validated FROM pg_constraint WHERE contype = 'c' AND conrelid::regclass::text LIKE 'agent\\_%' AND conname LIKE '%\\_values'`,
    );
    const checked = Object.fromEntries(
      rows.map((r) => {
        const column = /^CHECK \(\(\(?(\w+) = ANY/.exec(r.def)?.[1];
        expect(r.validated, r.def).toBe(true);
        return [`${r.table}.${column}`, [...r.def.matchAll(/'([^']*)'::text/g)].map((m) => m[1]).sort()];
      }),
    );
    const written = Object.fromEntries(Object.entries(WRITTEN).map(([k, v]) => [k, [...new Set(v)].sort()]));
    expect(checked).toEqual(written);
  });

  it('refuses a status, a risk level or a decision the code does not write, naming the constraint', async () => {
    await expect(db.query(`UPDATE agent_runs SET status = 'done' WHERE id = 'r1'`)).rejects.toThrow(
      /agent_runs_status_values/,
    );
    await expect(db.query(`UPDATE agent_events SET status = 'success' WHERE id = 'e1'`)).rejects.toThrow(
      /agent_events_status_values/,
    );
    await expect(db.query(`UPDATE agent_events SET decision = 'dropped' WHERE id = 'e1'`)).rejects.toThrow(
      /agent_events_decision_values/,
    );
    await expect(db.query(`UPDATE agent_steps SET status = 'failed' WHERE id = 's1'`)).rejects.toThrow(
      /agent_steps_status_values/,
    );
    await expect(db.query(`UPDATE agent_tool_calls SET status = 'failed' WHERE id = 't1'`)).rejects.toThrow(
      /agent_tool_calls_status_values/,
    );
    await expect(db.query(`UPDATE agent_tool_calls SET risk_level = 'critical' WHERE id = 't1'`)).rejects.toThrow(
      /agent_tool_calls_risk_level_values/,
    );
    await expect(db.query(`UPDATE agent_tool_calls SET approval_status = 'maybe' WHERE id = 't1'`)).rejects.toThrow(
      /agent_tool_calls_approval_status_values/,
    );
    await db.query(`UPDATE agent_tool_calls SET approval_status = NULL WHERE id = 't1'`);
  });

  it('refuses an intake run (one with an event) without its conversation or user; a direct run needs neither', async () => {
    await expect(db.query(`UPDATE agent_runs SET conversation_id = NULL WHERE id = 'r1'`)).rejects.toThrow(
      /agent_runs_intake_names_conversation/,
    );
    await expect(db.query(`UPDATE agent_runs SET user_id = NULL WHERE id = 'r1'`)).rejects.toThrow(
      /agent_runs_intake_names_conversation/,
    );
    expect((await db.query(`SELECT conversation_id, user_id FROM agent_runs WHERE id = 'r2'`)).rows).toEqual([
      { conversation_id: null, user_id: null },
    ]);
  });
});

describe('a database whose ledger rows were written before the ledger had views and checks', () => {
  it('takes the new migrations: the checks validate its rows and its views read their instants', async () => {
    const url = await createPostgresDatabase();
    const client = await connect(url);
    try {
      await client.query(
        'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)',
      );
      for (const m of loadMigrations('postgres').filter((m) => m.version < TYPES)) {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          T0,
        ]);
      }
      for (const sql of ledgerRows(T0)) await client.query(sql);
      expect((await client.query(`SELECT to_regclass('agent_runs_v') AS v`)).rows[0].v).toBeNull();

      const store = await openStore(url);
      const run = await store.agentRunGet({ id: 'r1' });
      await store.close();
      expect(run?.started_at).toBe(T0 + 2);
      const { rows } = await client.query(
        `SELECT count(*)::int AS n, bool_and(convalidated) AS validated FROM pg_constraint WHERE conname LIKE 'agent\\_%\\_values' OR conname = 'agent_runs_intake_names_conversation'`,
      );
      expect(rows[0]).toEqual({ n: 8, validated: true });
      const [view] = (await client.query(`SELECT started_at, ended_at FROM agent_runs_v WHERE id = 'r1'`)).rows;
      expect([view.started_at.getTime(), view.ended_at.getTime()]).toEqual([T0 + 2, T0 + 3]);
      await expect(
        client.query(
          `INSERT INTO agent_runs (id, event_id, agent, status, input_class, created_at, updated_at) VALUES ('r3', 'e1', 'a', 'pending', 'text', 0, 0)`,
        ),
      ).rejects.toThrow(/agent_runs_intake_names_conversation/);
    } finally {
      await client.end();
    }
  });

  it('refuses to validate a row the code never wrote, and keeps the database at the migration before', async () => {
    const url = await createPostgresDatabase();
    const client = await connect(url);
    try {
      await client.query(
        'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)',
      );
      for (const m of loadMigrations('postgres').filter((m) => m.version < TYPES)) {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          T0,
        ]);
      }
      for (const sql of ledgerRows(T0)) await client.query(sql);
      await client.query(`UPDATE agent_runs SET status = 'COMPLETED' WHERE id = 'r1'`);
      await expect(openStore(url)).rejects.toThrow(/agent_runs_status_values/);
      expect((await client.query('SELECT max(version) AS v FROM schema_migrations')).rows[0].v).toBe(TYPES);
    } finally {
      await client.end();
    }
  });
});
