import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { cli, serve } from './child.js';

describe('runledger batches run / show / list / cancel (brief 004 §15)', () => {
  it('starts one execution per JSON Lines input, shows the batch ending partial, and refuses a bad file', async () => {
    const server = await serve(createSqlitePath(), [], { RUNLEDGER_POLL_MS: '100' });
    const run = async (...args: string[]) => {
      const c = cli([...args, '--url', server.url]);
      return { exit: (await c.exited).code, output: c.output() };
    };
    try {
      const dir = mkdtempSync(join(tmpdir(), 'rl-batch-'));
      const definition = join(dir, 'greet.json');
      const steps = [{ id: 'greet', type: 'transform', config: { template: 'Hello {{trigger.name}}' } }];
      writeFileSync(definition, JSON.stringify({ name: 'greet', steps }));
      expect((await run('workflows', 'apply', definition)).exit).toBe(0);
      const inputs = join(dir, 'inputs.jsonl');
      writeFileSync(inputs, '{"name":"Ada"}\n\n{"name":"Alan"}\n{"nobody":true}\n');

      const started = await run('batches', 'run', 'greet', '--inputs', inputs, '--idempotency-key', 'k1');
      expect(started.exit, started.output).toBe(0);
      expect(started.output).toMatch(/started bt_\S+: 3 executions of wf_/);
      const id = /(bt_\w+)/.exec(started.output)![1]!;
      const again = await run('batches', 'run', 'greet', '--inputs', inputs, '--idempotency-key', 'k1');
      expect(again.output).toContain(`already started ${id}`);

      const batch = await eventually(async () => {
        const shown = JSON.parse((await run('batches', 'show', id, '--json')).output);
        return shown.status === 'running' ? undefined : shown;
      }, 20_000);
      expect(batch).toMatchObject({ status: 'partial', counts: { success: 2, failed: 1 }, progress: { ended: 3 } });
      expect((await run('batches', 'show', id)).output).toContain(`${id} partial (3/3 ended)`);
      expect((await run('batches', 'list')).output).toContain(id);
      const cancel = await run('batches', 'cancel', id, '--reason', 'late');
      expect(cancel.exit).not.toBe(0);
      expect(cancel.output).toContain('has already ended (partial)');

      writeFileSync(inputs, '{"name":"Ada"}\n[1]\n');
      const bad = await run('batches', 'run', 'greet', '--inputs', inputs);
      expect(bad.exit).not.toBe(0);
      expect(bad.output).toContain('line 2: must be a JSON object');
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });
});
