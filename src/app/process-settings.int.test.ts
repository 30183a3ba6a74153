import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { doctor } from '../doctor/checks.js';
import { backends } from '../testing/backends.js';
import { eventually } from '../testing/engine.js';
import { openApp, type OpenApp } from './open.js';

const secretKey = randomBytes(32);
const opened: OpenApp[] = [];
afterEach(async () => {
  for (const app of opened.splice(0)) await app.close();
});

const start = async (database: string, options: { role: 'serve' | 'worker'; allow?: string[]; workers?: boolean }) => {
  const app = await openApp({ database, secretKey, logger: pino({ level: 'silent' }), pollMs: 50, ...options });
  opened.push(app);
  return app;
};

const settingsCheck = async (database: string) =>
  (await doctor({ database, dataDir: mkdtempSync(join(tmpdir(), 'rl-doctor-')), sampleMs: 10 })).checks.find(
    (c) => c.name === 'process settings',
  );

describe.each(backends)('processes sharing a database compare their settings ($name)', (backend) => {
  it('a process started with another allowlist than a live one warns, naming both; doctor reports it', async () => {
    const database = await backend.create();
    const first = await start(database, { role: 'serve', allow: ['127.0.0.1'] });
    expect(first.settingsWarnings).toEqual([]);
    const second = await start(database, { role: 'worker' });
    expect(second.settingsWarnings).toEqual([
      `warning: process ${process.pid}@${(await import('node:os')).hostname()} (serve) has RUNLEDGER_HTTP_ALLOW=127.0.0.1 and this one has none: steps may run with either; give every process the same settings`,
    ]);
    const check = await settingsCheck(database);
    expect(check?.status).toBe('warn');
    expect(check?.detail).toMatch(
      /\(serve\) has RUNLEDGER_HTTP_ALLOW=127\.0\.0\.1; .*\(worker\) has no RUNLEDGER_HTTP_ALLOW: steps may run with either/,
    );
  }, 60_000);

  it('the same settings give no warning, nor does a process that runs no steps', async () => {
    const database = await backend.create();
    await start(database, { role: 'serve', allow: ['127.0.0.1'] });
    expect((await start(database, { role: 'worker', allow: ['127.0.0.1'] })).settingsWarnings).toEqual([]);
    expect((await start(database, { role: 'serve', workers: false })).settingsWarnings).toEqual([]);
    const check = await settingsCheck(database);
    expect(check).toEqual({
      name: 'process settings',
      status: 'ok',
      detail: 'the 2 live process(es) running steps have the same settings',
    });
  }, 60_000);

  it('a process ended by another while it was paused registers again with its settings', async () => {
    const database = await backend.create();
    const app = await start(database, { role: 'worker', allow: ['127.0.0.1'] });
    const id = app.engine.liveness.id;
    await app.engine.store.processExpire({ processes: [{ id, heartbeatAt: null }] });
    const again = await eventually(async () => (await app.engine.store.processList()).find((p) => p.id === id), 5_000);
    expect(again.settings?.values.RUNLEDGER_HTTP_ALLOW).toBe('127.0.0.1');
  }, 60_000);

  it('a process that stopped is no longer compared', async () => {
    const database = await backend.create();
    const first = await start(database, { role: 'serve', allow: ['127.0.0.1'] });
    await first.close();
    opened.splice(opened.indexOf(first), 1);
    expect((await start(database, { role: 'worker' })).settingsWarnings).toEqual([]);
  }, 60_000);
});
