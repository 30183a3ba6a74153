import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { createSqlitePath } from '../src/testing/databases.js';
import { cli, serve } from './child.js';
import { pipelineForTests } from './pipeline.js';

describe('runledger run --wait on the document pipeline (the README walkthrough)', () => {
  let mock: MockServices;
  beforeAll(async () => {
    mock = await startMockServices({ speed: 20, seed: 9 });
  });
  afterAll(() => mock.close());

  it('prints each state, the labels, and an ETA once there is history; retry of a failed branch from the CLI', async () => {
    const server = await serve(createSqlitePath(), [], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1', RUNLEDGER_POLL_MS: '100' });
    try {
      const file = join(mkdtempSync(join(tmpdir(), 'rl-cli-')), 'pipeline.json');
      writeFileSync(file, JSON.stringify(pipelineForTests()));
      const apply = cli(['workflows', 'apply', file, '--url', server.url]);
      await apply.exited;
      const wid = /created (wf_\S+)/.exec(apply.output())![1]!;
      const run = async () => {
        const c = cli([
          'run',
          wid,
          '--data',
          JSON.stringify({ services: mock.url, content: '# A\nText' }),
          '--wait',
          '--url',
          server.url,
        ]);
        return { exit: await c.exited, output: c.output() };
      };
      const first = await run();
      expect(first.exit.code, first.output).toBe(0);
      const states = first.output
        .split('\n')
        .filter((l) => l.startsWith('state '))
        .map((l) => l.split(/\s+/)[1]);
      expect(states).toEqual([
        'INITIALIZED',
        'SUBMITTED',
        'CONTENT_NORMALIZED',
        'LAYOUT_QUEUED',
        'LAYOUT_PROCESSING',
        'LAYOUT_COMPLETE',
        'RENDERING_QUEUED',
        'RENDERING_PROCESSING',
        'RENDERING_COMPLETE',
        'DELIVERED',
      ]);
      expect(first.output).toContain('layout_wait: Generating layout…');
      expect(first.output).toContain('wait_powerpoint: Rendering PowerPoint…');
      expect(first.output).toMatch(/execution ex_\S+ success DELIVERED/);
      expect(first.output).not.toContain('ETA');
      // the flagship demo's output (kilobytes of JSON) is located, not printed: no line runs on
      expect(first.output).toMatch(
        /\n {2}deliver +ok +\d+ ms\noutput: [\d.]+ K?B — runledger executions show ex_\S+ --url \S+ --json, or --output out\.json\n$/,
      );
      expect(Math.max(...first.output.split('\n').map((l) => l.length))).toBeLessThan(200);
      const second = await run();
      expect(second.output).toMatch(/state INITIALIZED {2}ETA ~\d+ s/);

      mock.setFaults([{ endpoint: 'POST /v1/render/presentations', job: 'fail', error: 'Image asset not found' }]);
      const partial = await run();
      expect(partial.exit.code).toBe(1);
      expect(partial.output).toMatch(/wait_powerpoint: failed — .*Image asset not found/);
      const eid = /execution (ex_\S+) partial_success PARTIAL_COMPLETE/.exec(partial.output)![1]!;
      const retry = cli(['executions', 'retry', wid, eid, '--branches', 'powerpoint', '--wait', '--url', server.url]);
      expect((await retry.exited).code, retry.output()).toBe(0);
      expect(retry.output()).toMatch(/execution ex_\S+ success DELIVERED/);
      expect(retry.output()).not.toContain('wait_word: Rendering');
      // what the retry took from the partly failed execution says so, live and in the summary
      expect(retry.output()).toMatch(/\n {2}create_session: reused\n/);
      expect(retry.output()).toMatch(/\n {2}create_session +reused\n/);
      expect(retry.output()).toMatch(/\n {4}wait_powerpoint +ok +[\d.]+ m?s/);
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  }, 90_000);
});
