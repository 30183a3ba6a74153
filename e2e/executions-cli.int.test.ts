import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { cli, serve } from './child.js';
import { pipelineForTests } from './pipeline.js';

describe('runledger executions cancel --reason and rerun --timeout (brief 004 §7.2, §8.2)', () => {
  let mock: MockServices;
  beforeAll(async () => {
    mock = await startMockServices({ speed: 20, seed: 13 });
  });
  afterAll(() => mock.close());

  it('cancel --reason is shown by executions show; rerun --timeout layout_wait=10m delivers what timed out, and a bad one names timeouts.<id>', async () => {
    const server = await serve(createSqlitePath(), [], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1', RUNLEDGER_POLL_MS: '100' });
    const run = async (...args: string[]) => {
      const c = cli([...args, '--url', server.url]);
      return { exit: (await c.exited).code, output: c.output() };
    };
    const record = async (eid: string) => JSON.parse((await run('executions', 'show', eid, '--json')).output);
    try {
      const file = join(mkdtempSync(join(tmpdir(), 'rl-cli-')), 'pipeline.json');
      writeFileSync(file, JSON.stringify(pipelineForTests({ layoutMaxWait: 0.05 })));
      const wid = /created (wf_\S+)/.exec((await run('workflows', 'apply', file)).output)![1]!;
      const data = JSON.stringify({ services: mock.url, content: '# A\nText' });

      const timedOut = await run('run', wid, '--data', data, '--wait');
      expect(timedOut.exit, timedOut.output).toBe(1);
      const eid = /execution (ex_\S+) failed FAILED_LAYOUT_GENERATION/.exec(timedOut.output)![1]!;
      const bad = await run('executions', 'rerun', eid, '--from', 'layout', '--timeout', 'layout_wait=soon');
      expect(bad.exit).not.toBe(0);
      expect(bad.output).toContain('timeouts.layout_wait');
      const rerun = await run('executions', 'rerun', eid, '--from', 'layout', '--timeout', 'layout_wait=10m', '--wait');
      expect(rerun.exit, rerun.output).toBe(0);
      expect(rerun.output).toMatch(/execution ex_\S+ success DELIVERED/);
      const rid = /execution (ex_\S+) reruns/.exec(rerun.output)![1]!;
      expect((await record(rid)).rerun_of).toEqual({
        execution_id: eid,
        from_step: 'layout',
        timeouts_seconds: { layout_wait: 600 },
      });

      mock.setFaults([{ endpoint: 'POST /v1/render/*', job: 'hang', times: 'always' }]);
      const patient = join(mkdtempSync(join(tmpdir(), 'rl-cli-')), 'pipeline.json');
      writeFileSync(patient, JSON.stringify({ ...pipelineForTests(), name: 'document-pipeline-patient' }));
      const pid = /created (wf_\S+)/.exec((await run('workflows', 'apply', patient)).output)![1]!;
      const started = await run('run', pid, '--data', data);
      const hanging = /(ex_\S+)/.exec(started.output)![1]!;
      await eventually(
        async () =>
          (await record(hanging)).steps.some(
            (s: { step_id: string; status: string }) => s.step_id === 'wait_word' && s.status === 'running',
          ),
        20_000,
      );
      const cancel = await run('executions', 'cancel', hanging, '--reason', 'customer withdrew the order');
      expect(cancel.exit, cancel.output).toBe(0);
      await eventually(async () => (await record(hanging)).status === 'cancelled', 20_000);
      const shown = await run('executions', 'show', hanging);
      expect(shown.output).toContain('cancelled: customer withdrew the order');
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });
});
