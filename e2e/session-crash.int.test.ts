import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../src/agents/agent.js';
import type { SessionEventType } from '../src/agents/lifecycle.js';
import { sessions } from '../src/agents/service.js';
import { createEngine, type Engine } from '../src/engine.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { runScript, type Exit } from './child.js';
import { SESSIONS } from './session-child.js';

const HAPPY: SessionEventType[] = [
  'SESSION_INITIATED',
  'AGENT_INVOCATION_STARTED',
  'AGENT_INVOCATION_SUCCEEDED',
  'AGENT_ENTRYPOINT_STARTED',
  'AGENT_BACKGROUND_TASK_STARTED',
  'AGENT_BACKGROUND_TASK_COMPLETED',
];

/** A session-child process the test can kill itself, at a moment it chooses. */
function startChild(...args: string[]): { exit: Promise<Exit>; kill: () => void } {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'e2e/session-child.ts', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (chunk) => (stderr += chunk));
  const exit = new Promise<Exit>((resolve, reject) => {
    proc.on('error', reject);
    proc.on('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
  return { exit, kill: () => proc.kill('SIGKILL') };
}

/**
 * Resolves true once the run waits for its report and no process is in a pass of it (see
 * `suspended` in sessions.int.test.ts), false when it ended without waiting.
 */
async function suspended(engine: Engine, id: string): Promise<boolean> {
  return eventually(async () => {
    const { status } = await engine.run(id);
    if (status === 'success' || status === 'failed' || status === 'cancelled') return 'ended';
    if (status !== 'waiting') return false;
    const running = await engine.store.taskList({ queue: 'runledger.runs', state: 'running', limit: 1000 });
    return !running.some((task) => task.orderingKey === id) && 'waiting';
  }, 60_000).then((state) => state === 'waiting');
}

describe.each(backends)('sessions surviving SIGKILL on $name', (backend) => {
  it('ends every session in its right status with each lifecycle event once, after kills mid-session', async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-sessions-')), 'agent.log');
    writeFileSync(log, '');
    const lines = () => readFileSync(log, 'utf8').split('\n').filter(Boolean);

    // The HTTP agent, here: it acknowledges, and this process reports for it once the session waits.
    const invocations: Array<{ session_id: string; key: string | undefined }> = [];
    const reports: Array<Promise<unknown>> = [];
    let engine: Engine | undefined;
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => {
        const { session_id } = JSON.parse(text) as { session_id: string };
        invocations.push({ session_id, key: req.headers['idempotency-key'] as string | undefined });
        res.writeHead(202).end();
        reports.push(
          suspended(engine!, session_id).then((waiting) =>
            waiting ? service.report(session_id, { status: 'COMPLETED' }) : null,
          ),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const agentUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/invoke`;
    engine = await createEngine({ database, workers: false, pollMs: 100 });
    const service = sessions(engine, engine.store, { agents: [defineAgent('remote', { url: agentUrl })] });

    try {
      // 1. killed while both long background tasks run
      const first = startChild(database, log, agentUrl);
      await eventually(() => ['s-ok', 's-fail'].every((id) => lines().includes(`${id} background 1`)), 30_000);
      first.kill();
      expect((await first.exit).signal).toBe('SIGKILL');
      // 2. killed right after a lifecycle event is written, before its step's completion is
      const afterRecord = [];
      for (const after of ['0', '0'])
        afterRecord.push(
          await runScript('e2e/session-child.ts', database, log, agentUrl, 'session:afterRecord', after),
        );
      for (const killed of afterRecord) expect(killed.signal, killed.stderr).toBe('SIGKILL');
      // 3. a last process takes over and finishes
      const last = await runScript('e2e/session-child.ts', database, log, agentUrl);
      expect(last.code, last.stderr).toBe(0);
      await Promise.all(reports);

      for (const [id] of SESSIONS) {
        const failing = id === 's-fail';
        const expected: SessionEventType[] = failing ? [...HAPPY.slice(0, 5), 'AGENT_BACKGROUND_TASK_FAILED'] : HAPPY;
        const stored = await engine.journal.readStream(`session:${id}`);
        expect(
          stored.map((e) => e.type),
          id,
        ).toEqual(expected);
        expect(await service.get(id), id).toMatchObject({
          status: failing ? 'failed' : 'success',
          events_count: expected.length,
          error_message: failing ? 'ClientError: ThrottlingException - Rate exceeded' : null,
        });
      }

      // the killed background tasks ran again in another process, the entrypoints that had finished did not
      for (const id of ['s-ok', 's-fail']) {
        const runs = lines().filter((line) => line.startsWith(`${id} background `));
        expect(runs.length, id).toBeGreaterThanOrEqual(2);
        expect(runs.at(-1), id).not.toBe(`${id} background 1`);
        expect(
          lines().filter((line) => line.startsWith(`${id} entrypoint `)),
          id,
        ).toEqual([`${id} entrypoint 1`]);
      }
      // each kill after a write made a step write its event again: the key returned the first one
      let rerunRecords = 0;
      for (const [id] of SESSIONS) {
        const starts = new Map<string, number>();
        for (const e of await engine.journal.readStream(`run:${id}`)) {
          const name = (e.data as { name?: string }).name ?? '';
          if (e.type === 'step.started' && name.startsWith('record:')) starts.set(name, (starts.get(name) ?? 0) + 1);
        }
        for (const count of starts.values()) rerunRecords += count - 1;
      }
      expect(rerunRecords).toBeGreaterThanOrEqual(afterRecord.length);
      expect(new Set(invocations.map((i) => i.key)).size).toBe(1);
      expect(invocations.every((i) => i.session_id === 's-http')).toBe(true);
      console.log(
        `${backend.name}: ${lines().length} agent phase runs, ${rerunRecords} record steps re-run, ${invocations.length} HTTP invocation(s)`,
      );
    } finally {
      server.closeAllConnections();
      server.close();
      await engine.close();
    }
  }, 120_000);
});
