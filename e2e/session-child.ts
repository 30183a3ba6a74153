/**
 * A worker process for the session crash test:
 * `node --import tsx e2e/session-child.ts <database> <log> <agent url> [crash point] [after]`.
 * Starts the sessions of SESSIONS (idempotent: a restart starts nothing new) and works until every
 * one has ended. The TypeScript agent appends a line to <log> first, synchronously, each time a
 * phase of it runs, so the parent can see where a kill landed and what ran again.
 */
import { appendFileSync } from 'node:fs';
import { defineAgent } from '../src/agents/agent.js';
import { isEnded } from '../src/agents/lifecycle.js';
import { ClientError } from '../src/agents/sample.js';
import { sessions } from '../src/agents/service.js';
import { armCrashPoint, type CrashPointName } from '../src/crash.js';
import { createEngine } from '../src/engine.js';

/** The sessions of the test: [session id, agent, input]. */
export const SESSIONS: Array<[string, string, Record<string, unknown>]> = [
  ['s-ok', 'slow', { ms: 1500 }],
  ['s-fail', 'slow', { ms: 1500, fail: true }],
  ['s-http', 'remote', {}],
  ...[0, 1, 2, 3].map((n): [string, string, Record<string, unknown>] => [`s-quick-${n}`, 'slow', { ms: 50 }]),
];

if (process.argv[1]?.endsWith('session-child.ts')) {
  const [database, log, agentUrl, point, after] = process.argv.slice(2);

  const slow = defineAgent('slow', {
    entrypoint: async (_input, { sessionId, attempt }) => appendFileSync(log!, `${sessionId} entrypoint ${attempt}\n`),
    background: async (input: { ms: number; fail?: boolean }, { sessionId, attempt, signal }) => {
      appendFileSync(log!, `${sessionId} background ${attempt}\n`);
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, input.ms);
        signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
      });
      if (input.fail) throw new ClientError('ThrottlingException - Rate exceeded');
    },
    maxWait: '1m',
  });
  const remote = defineAgent('remote', { url: agentUrl!, maxWait: '1m' });

  const engine = await createEngine({ database: database!, pollMs: 100, leaseMs: 1000 });
  // the parent reports for the HTTP agent through its own service: the report_url handed out is never called,
  // but an HTTP agent is invoked only with an absolute one
  const service = sessions(engine, engine.store, {
    agents: [slow, remote],
    allow: ['127.0.0.1'],
    reportBaseUrl: agentUrl!,
  });
  if (point) armCrashPoint(point as CrashPointName, Number(after ?? 0));
  for (const [session_id, agent, input] of SESSIONS) await service.create({ agent, input, session_id });
  for (const [id] of SESSIONS) {
    while (!isEnded((await service.get(id)).status)) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await engine.close();
}
