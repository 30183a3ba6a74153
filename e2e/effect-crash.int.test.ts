import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { decideEffect } from '../src/runtime/pass/effect-decision.js';
import { backends } from '../src/testing/backends.js';
import { runScript } from './child.js';

const child = (...args: string[]) => runScript('e2e/effect-child.ts', ...args);

/**
 * Issue 46's "a side effect killed between call and record is reconciled, never repeated": a worker process is
 * SIGKILLed at `effect:afterCall` (the effect happened, its result is not journaled); the next process settles the
 * unknown outcome by reconcile, or waits for a person (atMostOnce), and the effect is never made twice.
 */
describe.each(backends)('an effect step killed between its call and its record on $name', (backend) => {
  const setup = async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-effect-')), 'charges.log');
    writeFileSync(log, '');
    const charges = () => readFileSync(log, 'utf8').split('\n').filter(Boolean);
    return { database, log, charges };
  };

  it('is reconciled after the restart: charged once, the output the reconciled one', async () => {
    const { database, log, charges } = await setup();
    const killed = await child(database, log, 'reconcile', 'ended', 'effect:afterCall');
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(charges()).toEqual(['pay-reconcile:charge#1']);
    const finished = await child(database, log, 'reconcile', 'ended');
    expect(finished.code, finished.stderr).toBe(0);
    expect(charges()).toEqual(['pay-reconcile:charge#1']);
    const engine = await createEngine({ database });
    try {
      const view = await engine.run('pay-reconcile');
      expect(view).toMatchObject({ status: 'success', output: 'reconciled pay-reconcile:charge#1' });
      expect(view.steps[0]).toMatchObject({ status: 'success', effect: 'reconciled' });
      const types = (await engine.journal.readStream('run:pay-reconcile')).map((e) => e.type);
      expect(types.filter((t) => t.startsWith('step.'))).toEqual([
        'step.started',
        'step.intent',
        'step.unknown',
        'step.reconciled',
        'step.completed',
      ]);
    } finally {
      await engine.close();
    }
  }, 60_000);

  it('with atMostOnce and no reconcile, waits for a person instead of charging again', async () => {
    const { database, log, charges } = await setup();
    const killed = await child(database, log, 'person', 'ended', 'effect:afterCall');
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const waiting = await child(database, log, 'person', 'waiting');
    expect(waiting.code, waiting.stderr).toBe(0);
    expect(charges()).toEqual(['pay-person:charge#1']);
    const engine = await createEngine({ database });
    try {
      const view = await engine.run('pay-person');
      expect(view).toMatchObject({ status: 'waiting', effectWait: { name: 'charge' } });
      expect(view.steps[0]!.effect).toBe('unknown');
      await decideEffect(engine.runtime, 'pay-person', { decision: 'happened', by: 'ana', output: 'bank says ok' });
    } finally {
      await engine.close();
    }
    const finished = await child(database, log, 'person', 'ended');
    expect(finished.code, finished.stderr).toBe(0);
    expect(charges()).toEqual(['pay-person:charge#1']);
    const after = await createEngine({ database });
    try {
      expect(await after.run('pay-person')).toMatchObject({ status: 'success', output: 'bank says ok' });
    } finally {
      await after.close();
    }
  }, 60_000);
});
