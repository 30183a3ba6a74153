import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { cli, serve } from './child.js';
import { pipelineForTests } from './pipeline.js';

describe('runledger executions cancel --delete-artifacts (brief 004 §9.2)', () => {
  let mock: MockServices;
  beforeAll(async () => {
    mock = await startMockServices({ speed: 20, seed: 14 });
  });
  afterAll(() => mock.close());

  it('deletes the artifact Word produced, and executions show says who cancelled', async () => {
    const server = await serve(createSqlitePath(), [], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1', RUNLEDGER_POLL_MS: '100' });
    const run = async (...args: string[]) => {
      const c = cli([...args, '--url', server.url]);
      return { exit: (await c.exited).code, output: c.output() };
    };
    const record = async (eid: string) => JSON.parse((await run('executions', 'show', eid, '--json')).output);
    try {
      mock.setFaults([{ endpoint: 'POST /v1/render/presentations', job: 'hang', times: 'always' }]);
      const file = join(mkdtempSync(join(tmpdir(), 'rl-cli-')), 'pipeline.json');
      writeFileSync(file, JSON.stringify(pipelineForTests()));
      const wid = /created (wf_\S+)/.exec((await run('workflows', 'apply', file)).output)![1]!;
      const started = await run('run', wid, '--data', JSON.stringify({ services: mock.url, content: '# A\nText' }));
      const eid = /(ex_\S+)/.exec(started.output)![1]!;
      const artifact = await eventually(async () => {
        const word = (await record(eid)).steps.find((s: { step_id: string }) => s.step_id === 'wait_word');
        return word.status === 'success' ? (word.output.body.artifact_id as string) : undefined;
      }, 20_000);

      const cancel = await run('executions', 'cancel', eid, '--reason', 'not needed', '--delete-artifacts');
      expect(cancel.exit, cancel.output).toBe(0);
      await eventually(async () => (await record(eid)).status === 'cancelled', 20_000);
      expect(mock.calls({ method: 'DELETE', path: '/v1/artifacts/{id}' }).map((c) => c.path)).toEqual([
        `/v1/artifacts/${artifact}`,
      ]);
      expect((await run('executions', 'show', eid)).output).toContain('cancelled: not needed (by user)');
      expect(await record(eid)).toMatchObject({ cancelled_by: 'user', cancel_reason: 'not needed' });
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });
});
