import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { RUN_VIEW } from '../src/runtime/read/view.js';
import { workflow } from '../src/runtime/workflow.js';
import { backends } from '../src/testing/backends.js';
import { storedWorkflows } from '../src/app/workflows.js';

/** Runs `runledger …` as a real process; resolves with its exit code and output. */
function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['bin/runledger.js', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, RUNLEDGER_DATABASE: '', DATABASE_URL: '', ...env },
    });
    let out = '';
    proc.stdout.on('data', (chunk) => (out += chunk));
    proc.stderr.on('data', (chunk) => (out += chunk));
    proc.on('exit', (code) => resolve({ code, out }));
  });
}

const quick = workflow('quick', async (ctx) => ctx.step('one', async () => 1));

describe.each(backends)('runledger doctor and prune on $name', (backend) => {
  it('reports a healthy deployment with exit 0, and a broken one with exit 1 naming what is wrong', async () => {
    const database = await backend.create();
    const key = randomBytes(32).toString('hex');
    const dataDir = mkdtempSync(join(tmpdir(), 'runledger-doctor-'));
    const engine = await createEngine({ database, workflows: [quick], pollMs: 100 });
    try {
      await storedWorkflows(engine, { secretKey: Buffer.from(key, 'hex') }).secrets.set('API_TOKEN', 's3cr3t-value');
      await (await engine.start(quick, {}, { id: 'fine-1' })).result();
    } finally {
      await engine.close();
    }
    const env = { RUNLEDGER_SECRET_KEY: key, RUNLEDGER_DATA_DIR: dataDir };

    const healthy = await cli(['doctor', '--database', database, '--sample', '300'], env);
    expect(healthy.code, healthy.out).toBe(0);
    expect(healthy.out).toMatch(/ok +store +reachable, [\d.]+ ms round trip/);
    expect(healthy.out).toMatch(/ok +migrations +all \d+ applied/);
    expect(healthy.out).toMatch(/ok +secret key +present \(RUNLEDGER_SECRET_KEY\) and decrypts the 1 stored secret/);
    expect(healthy.out).toMatch(/ok +runs /);
    expect(healthy.out).toMatch(/\nhealthy/);
    if (backend.name === 'postgres') {
      expect(healthy.out).toMatch(/ok +clock +database clock (ahead of|behind) this machine by \d+ ms/);
      expect(healthy.out).toMatch(/idle query rate +[\d.]+ (commits|statements)\/s/);
      // the server's own setting decides which: this machine's PostgreSQL runs with it off
      const client = new pg.Client({ connectionString: database });
      await client.connect();
      const { rows } = await client.query<{ on: boolean }>("SELECT current_setting('autovacuum') = 'on' AS on");
      await client.end();
      expect(healthy.out).toMatch(
        rows[0]!.on
          ? /ok +vacuum +autovacuum is on \(\d+ dead rows/
          : /WARN +vacuum +PostgreSQL's autovacuum is off: .* \(\d+ dead, \d+ live now\)/,
      );
    }
    expect(healthy.out).not.toContain('s3cr3t-value');

    // break it: a run that says it runs with no task to run it, a blocked subscription, a dead letter, and the wrong key
    const broken = await createEngine({ database, workers: false });
    try {
      await broken.journal.append('run:lost-1', [
        {
          type: 'run.started',
          data: { workflow: 'quick', input: null, orderingKey: null, deadline: null, parent: null },
        },
      ]);
      const view = (await broken.store.projectionGet({ name: RUN_VIEW, key: 'lost-1' })) as Record<string, unknown>;
      await broken.store.projectionPut({
        name: RUN_VIEW,
        key: 'lost-1',
        value: { ...view, status: 'running', updatedAt: Date.now() - 3_600_000 },
      });
      await broken.store.subscriptionEnsure({
        name: 'billing',
        streamPrefix: null,
        types: null,
        ordered: true,
        from: 'beginning',
      });
      await broken.store.subscriptionBlock({ name: 'billing', blockedReason: 'event 1 failed 5 times' });
      const [claimed] = await broken.store.transaction(async (tx) => {
        await tx.taskEnqueue({
          tasks: [
            {
              id: 'task_doomed',
              queue: 'mail',
              payload: {},
              idempotencyKey: null,
              orderingKey: null,
              runAt: null,
              priority: 0,
              maxAttempts: 1,
            },
          ],
        });
        return tx.taskClaim({ queue: 'mail', limit: 1, leaseMs: 60_000, workerId: 'w', leaseToken: 'l' });
      });
      await broken.store.taskFail({ id: claimed!.id, leaseToken: 'l', error: 'bounced', retryDelayMs: null });
    } finally {
      await broken.close();
    }
    const bad = await cli(['doctor', '--database', database, '--sample', '200'], {
      ...env,
      RUNLEDGER_SECRET_KEY: randomBytes(32).toString('hex'),
    });
    expect(bad.code, bad.out).toBe(1);
    expect(bad.out).toMatch(/FAIL +runs +1 run\(s\) say they run or sleep but no task will run them: lost-1/);
    expect(bad.out).toMatch(/FAIL +subscriptions +blocked: billing/);
    expect(bad.out).toMatch(/WARN +dead letters +1 dead task\(s\) \(mail 1\)/);
    expect(bad.out).toMatch(/FAIL +secret key +secret API_TOKEN could not be decrypted/);
    expect(bad.out).toMatch(/\nunhealthy: 3 check\(s\) failed/);

    const json = await cli(['doctor', '--database', database, '--json', '--sample', '100'], env);
    expect(json.code).toBe(1);
    const report = JSON.parse(json.out) as { ok: boolean; checks: Array<{ name: string; status: string }> };
    expect(report.ok).toBe(false);
    expect(report.checks.find((c) => c.name === 'secret key')?.status).toBe('ok');

    const dry = await cli(['prune', '--database', database, '--older-than', '0s', '--kind', 'runs', '--dry-run']);
    expect(dry.code, dry.out).toBe(0);
    expect(dry.out).toMatch(/would delete runs: 1 runs \(\d+ tasks, \d+ events\)/);
    const pruned = await cli(['prune', '--database', database, '--older-than', '0s']);
    expect(pruned.code, pruned.out).toBe(0);
    expect(pruned.out).toMatch(/deleted runs: 1 runs/);
    expect(pruned.out).toMatch(/deleted tasks: 1 tasks/);
    const after = await createEngine({ database, workers: false });
    try {
      await expect(after.run('fine-1')).rejects.toThrow(/not found/);
    } finally {
      await after.close();
    }
  }, 90_000);

  it('fails on a store it cannot reach', async () => {
    const database =
      backend.name === 'sqlite'
        ? join(mkdtempSync(join(tmpdir(), 'runledger-doctor-')), 'missing.db')
        : 'postgres://postgres@127.0.0.1:1/nowhere';
    const result = await cli(['doctor', '--database', database, '--sample', '100']);
    expect(result.code, result.out).toBe(1);
    expect(result.out).toMatch(/FAIL +store +(no database file at .*missing\.db|unreachable)/);
  }, 30_000);
});
