import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { pipelineForTests } from './pipeline.js';
import { serve } from './child.js';

const json = async (url: string, init: RequestInit = {}) => {
  const res = await fetch(url, { ...init, headers: { 'content-type': 'application/json' } });
  return res.json() as Promise<any>;
};

describe.each(backends)('the document pipeline survives SIGKILL of runledger serve mid-poll on $name', (backend) => {
  let mock: MockServices;
  beforeAll(async () => {
    // speed 2: the layout takes ~2 s, time enough to kill the server while it polls
    mock = await startMockServices({ speed: 2, seed: 5 });
  });
  afterAll(() => mock.close());

  it('resumes polling after a restart and never submits the layout again', async () => {
    const database = await backend.create();
    const dataDir = mkdtempSync(join(tmpdir(), 'rl-pipeline-'));
    const env = {
      RUNLEDGER_HTTP_ALLOW: '127.0.0.1',
      RUNLEDGER_DATA_DIR: dataDir,
      RUNLEDGER_LEASE_MS: '1500',
      RUNLEDGER_POLL_MS: '100',
    };
    const first = await serve(database, [], env);
    let second: Awaited<ReturnType<typeof serve>> | null = null;
    try {
      const wf = await json(`${first.url}/workflows`, { method: 'POST', body: JSON.stringify(pipelineForTests()) });
      const { execution_id: eid } = await json(`${first.url}/workflows/${wf.id}/execute`, {
        method: 'POST',
        body: JSON.stringify({ trigger_data: { services: mock.url, content: '# A\nText' } }),
      });
      const polled = async (url: string) =>
        (await json(`${url}/runs/${eid}/events?types=poll.attempted&limit=1000`)).events.filter(
          (e: any) => e.data.name === 'layout_wait',
        ).length;
      await eventually(async () => (await polled(first.url)) >= 1, 30_000);
      first.proc.kill('SIGKILL');
      expect((await first.exited).signal).toBe('SIGKILL');
      const before = mock.calls().length;

      second = await serve(database, [], env);
      const done = await eventually(async () => {
        const record = await json(`${second!.url}/workflows/${wf.id}/executions/${eid}`);
        return ['success', 'failed', 'cancelled', 'partial_success'].includes(record.status) ? record : undefined;
      }, 60_000);
      expect(done).toMatchObject({ status: 'success', state: 'DELIVERED' });
      // after the restart it polled the proposal again rather than submitting a new one
      expect(
        mock
          .calls()
          .slice(before)
          .some((c) => c.method === 'GET' && c.path.startsWith('/v1/layout/proposals/')),
      ).toBe(true);
      expect(mock.calls({ method: 'POST', path: '/v1/layout/proposals' })).toHaveLength(1);
      expect(mock.calls({ method: 'POST', path: '/v1/intake/sessions' })).toHaveLength(1);
      expect(mock.calls({ method: 'POST', path: '/v1/intake/sessions/{id}/submit' })).toHaveLength(1);
      const waits = (
        await json(`${second.url}/runs/${eid}/events?types=poll.started,poll.completed&limit=1000`)
      ).events.filter((e: any) => e.data.name === 'layout_wait');
      expect(waits.map((e: any) => e.type)).toEqual(['poll.started', 'poll.completed']);
    } finally {
      first.proc.kill('SIGKILL');
      second?.proc.kill('SIGTERM');
      await second?.exited;
    }
  }, 120_000);
});
