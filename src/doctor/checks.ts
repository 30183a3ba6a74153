import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadMigrations } from '../storage/migrations.js';
import { openStore } from '../storage/open.js';
import { explainConnectError, maskedUrl } from '../storage/location.js';
import type { QueueStats, Store } from '../storage/store.js';
import { stuckRuns } from '../runtime/read/overview.js';
import { Journal } from '../journal/journal.js';
import { resolveConfig } from '../config.js';
import { loadSecretKey, Secrets } from '../workflows/secrets.js';
import { checkPublicUrlSetting } from './public-url.js';
import { checkProcessSettings } from './process-settings.js';

export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
}

export interface DoctorReport {
  ok: boolean;
  database: string;
  checks: Check[];
}

export interface DoctorOptions {
  database: string;
  /** RUNLEDGER_SECRET_KEY, when set. */
  secretKey?: string;
  /** Where the key file is looked for. */
  dataDir: string;
  /** How long the commit rate is sampled (PostgreSQL). Default 2 s. */
  sampleMs?: number;
  /** Runs scanned for being stuck, newest first. */
  maxRuns?: number;
  /** RUNLEDGER_PUBLIC_URL, when set. */
  publicUrl?: string;
}

const isPostgres = (location: string) => /^postgres(ql)?:\/\//.test(location);

/**
 * Looks at a deployment without changing it (no migration is applied, no key file created): the
 * store, migrations, clocks, leases, runs, subscriptions, dead letters, the secret key, the public
 * URL callbacks are handed out under and the idle commit rate. `ok` is false when any check failed; warnings do not fail it.
 *
 * @example const report = await doctor({ database: 'postgres://…', dataDir: '.' }); process.exitCode = report.ok ? 0 : 1;
 */
export async function doctor(options: DoctorOptions): Promise<DoctorReport> {
  const checks: Check[] = [];
  const add = (name: string, status: CheckStatus, detail: string) => checks.push({ name, status, detail });
  const report = () => ({
    ok: checks.every((c) => c.status !== 'fail'),
    database: maskedUrl(options.database),
    checks,
  });
  if (!isPostgres(options.database) && options.database !== ':memory:' && !existsSync(options.database)) {
    add('store', 'fail', `no database file at ${options.database}`);
    return report();
  }
  let store: Store;
  try {
    store = await openStore(options.database, { migrate: false });
  } catch (error) {
    add('store', 'fail', `cannot open: ${message(error)}`);
    return report();
  }
  try {
    await run(checks, add, store, options);
  } finally {
    await store.close().catch(() => {});
  }
  return report();
}

async function run(
  checks: Check[],
  add: (name: string, status: CheckStatus, detail: string) => void,
  store: Store,
  options: DoctorOptions,
): Promise<void> {
  let diagnosis: Awaited<ReturnType<Store['storageDiagnose']>>;
  try {
    diagnosis = await store.storageDiagnose({ sampleMs: options.sampleMs ?? 2000 });
  } catch (error) {
    add(
      'store',
      'fail',
      `unreachable or not a runledger database: ${explainConnectError(options.database, error)?.message.replace(/^database: /, '') ?? message(error)}`,
    );
    return;
  }
  const latency = `${diagnosis.latencyMs.toFixed(1)} ms round trip (${store.dialect})`;
  add(
    'store',
    diagnosis.latencyMs > 100 ? 'warn' : 'ok',
    diagnosis.latencyMs > 100 ? `slow: ${latency}` : `reachable, ${latency}`,
  );

  const shipped = loadMigrations(store.dialect).map((m) => m.version);
  const pending = shipped.filter((v) => !diagnosis.migrations.includes(v));
  const unknown = diagnosis.migrations.filter((v) => !shipped.includes(v));
  if (pending.length > 0)
    add(
      'migrations',
      'warn',
      `${diagnosis.migrations.length} applied; pending: ${pending.join(', ')} (applied on the next start)`,
    );
  else if (unknown.length > 0) add('migrations', 'warn', `applied by a newer runledger: ${unknown.join(', ')}`);
  else add('migrations', 'ok', `all ${shipped.length} applied (latest ${Math.max(...shipped)})`);
  if (pending.includes(1)) return;

  if (store.dialect === 'postgres') {
    const skew = Math.round(diagnosis.clockSkewMs);
    const status = Math.abs(skew) > 5000 ? 'fail' : Math.abs(skew) > 500 ? 'warn' : 'ok';
    add(
      'clock',
      status,
      `database clock ${skew >= 0 ? 'ahead of' : 'behind'} this machine by ${Math.abs(skew)} ms${status === 'ok' ? '' : ": timers and retries use this machine's clock, leases the database's"}`,
    );
  }

  const queues = await store.taskStats();
  const expired = sum(queues, 'expiredLeases');
  add(
    'leases',
    expired > 0 ? 'warn' : 'ok',
    expired > 0
      ? `${expired} running task(s) with an expired lease (${names(queues, 'expiredLeases')}): their workers died; a running worker frees them within its poll`
      : 'no expired lease',
  );
  // the doctor opens no engine (it must not migrate): the runtime's scan, on the store it opened
  const stuck = await stuckRuns(store, new Journal(store, resolveConfig()), options.maxRuns ?? 10_000);
  add(
    'runs',
    stuck.length > 0 ? 'fail' : 'ok',
    stuck.length > 0
      ? `${stuck.length} run(s) say they run or sleep but no task will run them: ${stuck.slice(0, 5).join(', ')}${stuck.length > 5 ? ', …' : ''}`
      : 'every running or sleeping run has its next pass queued',
  );
  const dead = sum(queues, 'dead');
  add(
    'dead letters',
    dead > 0 ? 'warn' : 'ok',
    dead > 0 ? `${dead} dead task(s) (${names(queues, 'dead')}): GET /dlq, runledger tasks list --state dead` : 'none',
  );
  const backlog = queues.filter((q) => q.due > 0).map((q) => `${q.queue} ${q.due}`);
  if (backlog.length > 0) add('queues', 'ok', `due now: ${backlog.join(', ')}`);

  const subscriptions = await store.subscriptionStats();
  const blocked = subscriptions.filter((s) => s.blocked).map((s) => s.name);
  const lagging = subscriptions.filter((s) => s.behind > 10_000).map((s) => `${s.name} (${s.behind} behind)`);
  const parked = subscriptions.filter((s) => s.parked > 0).map((s) => `${s.name} ${s.parked}`);
  if (blocked.length > 0)
    add(
      'subscriptions',
      'fail',
      `blocked: ${blocked.join(', ')} (runledger subscriptions; retry or skip the parked event)`,
    );
  else if (lagging.length > 0) add('subscriptions', 'warn', `lagging: ${lagging.join(', ')}`);
  else
    add(
      'subscriptions',
      'ok',
      subscriptions.length === 0
        ? 'none'
        : `${subscriptions.length} flowing, at most ${Math.max(...subscriptions.map((s) => s.behind))} positions behind`,
    );
  add('parked events', parked.length > 0 ? 'warn' : 'ok', parked.length > 0 ? parked.join(', ') : 'none');

  await checkSecretKey(add, store, options);
  await checkPublicUrlSetting(add, store, options.publicUrl);
  await checkProcessSettings(add, store);

  if (diagnosis.vacuum && !diagnosis.vacuum.autovacuum) {
    const { live, dead } = diagnosis.vacuum;
    add(
      'vacuum',
      'warn',
      `PostgreSQL's autovacuum is off: every step and task leaves dead rows in tasks, projections and streams (${dead} dead, ${live} live now) and throughput falls as they pile up (measured: 106 → 43 executions/s within 100 s; steady at 127/s with a VACUUM every 10 s). Turn it on (autovacuum = on), or VACUUM those tables every few seconds`,
    );
  } else if (diagnosis.vacuum)
    add('vacuum', 'ok', `autovacuum is on (${diagnosis.vacuum.dead} dead rows in tasks, projections and streams)`);

  if (diagnosis.commitsPerSecond !== null) {
    const rate = diagnosis.commitsPerSecond;
    add(
      'idle query rate',
      rate > 200 ? 'warn' : 'ok',
      `${rate.toFixed(1)} ${diagnosis.commitsSource === 'pg_stat_statements' ? 'statements' : 'commits'}/s over ${((options.sampleMs ?? 2000) / 1000).toFixed(1)} s (from ${diagnosis.commitsSource})`,
    );
  } else if (diagnosis.autoVacuum !== null) {
    add(
      'space',
      diagnosis.autoVacuum === 2 ? 'ok' : 'warn',
      diagnosis.autoVacuum === 2
        ? 'incremental auto-vacuum: space freed by retention returns to the file system'
        : 'the file predates incremental auto-vacuum: space freed by retention is reused but the file does not shrink (VACUUM once, offline, to switch)',
    );
  }
}

async function checkSecretKey(
  add: (name: string, status: CheckStatus, detail: string) => void,
  store: Store,
  options: DoctorOptions,
): Promise<void> {
  const file = join(options.dataDir, 'secret.key');
  const stored = await store.projectionList({ name: 'secret', limit: 1 });
  if (options.secretKey === undefined && !existsSync(file)) {
    if (stored.length > 0)
      add(
        'secret key',
        'fail',
        `secrets are stored but there is no key: set RUNLEDGER_SECRET_KEY or put the key file at ${file}`,
      );
    else
      add(
        'secret key',
        'warn',
        `no key yet (RUNLEDGER_SECRET_KEY unset, no ${file}): the first start creates one; keep it with the backups`,
      );
    return;
  }
  let key: Buffer;
  try {
    key = await loadSecretKey({
      dataDir: options.dataDir,
      ...(options.secretKey !== undefined ? { env: options.secretKey } : {}),
    });
  } catch (error) {
    add('secret key', 'fail', message(error));
    return;
  }
  const source = options.secretKey !== undefined ? 'RUNLEDGER_SECRET_KEY' : file;
  if (stored.length === 0) {
    add('secret key', 'ok', `present (${source}); no secret stored to check it against`);
    return;
  }
  try {
    const values = await new Secrets(store, new Journal(store, resolveConfig()), key).values();
    add('secret key', 'ok', `present (${source}) and decrypts the ${Object.keys(values).length} stored secret(s)`);
  } catch (error) {
    add('secret key', 'fail', message(error));
  }
}

const sum = (queues: QueueStats[], field: 'dead' | 'expiredLeases') => queues.reduce((n, q) => n + q[field], 0);
const names = (queues: QueueStats[], field: 'dead' | 'expiredLeases') =>
  queues
    .filter((q) => q[field] > 0)
    .map((q) => `${q.queue} ${q[field]}`)
    .join(', ');
const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The report as people read it: one line per check, then the verdict. */
export function formatReport(report: DoctorReport): string {
  const mark: Record<CheckStatus, string> = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL' };
  const width = Math.max(...report.checks.map((c) => c.name.length));
  const lines = [
    `runledger doctor: ${report.database}`,
    ...report.checks.map((c) => `  ${mark[c.status]}  ${c.name.padEnd(width)}  ${c.detail}`),
  ];
  const failed = report.checks.filter((c) => c.status === 'fail').length;
  const warned = report.checks.filter((c) => c.status === 'warn').length;
  lines.push(
    failed > 0
      ? `unhealthy: ${failed} check(s) failed${warned ? `, ${warned} warning(s)` : ''}`
      : `healthy${warned ? ` (${warned} warning(s))` : ''}`,
  );
  return lines.join('\n');
}
