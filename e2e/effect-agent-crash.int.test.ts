import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { backends } from '../src/testing/backends.js';
import { runScript } from './child.js';
import { payerRun } from './effect-agent-child.js';

const child = (...args: string[]) => runScript('e2e/effect-agent-child.ts', ...args);

/**
 * Issue 46 for agent tools: a worker is SIGKILLed at `effect:afterCall`, after tool `refund` went through and before
 * its result was journaled. The next worker asks the tool's `reconcile` instead of refunding again; the ledger's tool
 * call went `unknown` then `reconciled`, its output the reconciled one.
 */
describe.each(backends)('an effect tool killed between its call and its record on $name', (backend) => {
  it('is reconciled, never called twice; the ledger shows unknown then reconciled', async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-effect-tool-')), 'refunds.log');
    writeFileSync(log, '');
    const refunds = () => readFileSync(log, 'utf8').split('\n').filter(Boolean);
    const killed = await child(database, log, 'effect:afterCall');
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(refunds()).toHaveLength(1);
    const finished = await child(database, log);
    expect(finished.code, finished.stderr).toBe(0);
    expect(refunds()).toHaveLength(1);

    const engine = await createEngine({ database, workers: false });
    try {
      const { ledger, runId } = await payerRun(engine, log);
      const run = await ledger.run(runId);
      expect(run.status).toBe('success');
      expect(run.tool_calls).toHaveLength(1);
      expect(run.tool_calls[0]).toMatchObject({
        tool_name: 'refund',
        status: 'reconciled',
        output: { refunded: 7, by: 'reconcile' },
        external_idempotency_key: refunds()[0],
      });
      const types = (await engine.journal.readStream(`run:${runId}`)).map((e) => e.type);
      const effect = types.filter((t) => ['step.intent', 'step.unknown', 'step.reconciled'].includes(t));
      expect(effect).toEqual(['step.intent', 'step.unknown', 'step.reconciled']);
    } finally {
      await engine.close();
    }
  }, 60_000);
});
