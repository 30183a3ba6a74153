import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../engine.js';
import { ConflictError, ValidationError } from '../../errors.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import { recordedHistory, replayHistory } from '../replay.js';
import { workflow, type RetryPolicy, type Workflow } from '../workflow.js';
import { decideEffect } from './effect-decision.js';
import type { EffectOptions } from './effects.js';

const fast: RetryPolicy = { maxAttempts: 3, backoff: { base: '10ms', factor: 1, max: '10ms' } };

/**
 * A payment whose first call goes through at the bank but hangs past the step's timeout: its outcome is unknown
 * (a crash between the call and its record is the same case; e2e/effect-crash.int.test.ts kills a process there).
 */
function payment(name: string, bank: string[], effect: EffectOptions<string> | true, retry = fast) {
  return workflow(name, async (ctx) =>
    ctx.step(
      'pay',
      async ({ idempotencyKey, signal }) => {
        bank.push(idempotencyKey);
        if (bank.length === 1) await new Promise((_, reject) => signal.addEventListener('abort', reject));
        return `paid#${bank.length}`;
      },
      { effect, timeout: '100ms', retry, input: { amount: 5 } },
    ),
  );
}

describe.each(backends)('effect steps with an unknown outcome on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });
  const engineWith = async (...workflows: Workflow[]): Promise<Engine> => {
    const made = await testEngine(backend, { workflows, pollMs: 50 });
    close = made.close;
    return made.engine;
  };
  const types = async (engine: Engine, id: string) =>
    (await engine.journal.readStream(`run:${id}`)).map((e) => e.type).filter((t) => t.startsWith('step.'));
  const ended = async (engine: Engine, id: string) => {
    await eventually(async () => ['success', 'failed'].includes((await engine.run(id)).status), 20_000);
    return engine.run(id);
  };

  it('reconciles instead of repeating: a reconcile that throws is retried, then the effect is found', async () => {
    const bank: string[] = [];
    let asked = 0;
    const wf = payment('pay-reconcile', bank, {
      reconcile: async (key) => {
        if (++asked < 3) throw new Error('bank status API unavailable');
        return bank.includes(key) ? { happened: true, output: `found ${key}` } : { happened: false };
      },
    });
    const engine = await engineWith(wf);
    await engine.start(wf, {}, { id: 'rec-1' });
    const view = await ended(engine, 'rec-1');
    expect(view.status).toBe('success');
    expect(view.output).toBe('found rec-1:pay#1');
    expect(bank).toEqual(['rec-1:pay#1']);
    expect(view.steps[0]).toMatchObject({ name: 'pay', status: 'success', effect: 'reconciled' });
    expect(await types(engine, 'rec-1')).toEqual([
      'step.started',
      'step.intent',
      'step.failed',
      'step.unknown',
      'step.failed',
      'step.failed',
      'step.reconciled',
      'step.completed',
    ]);
    const intent = (await engine.journal.readStream('run:rec-1')).find((e) => e.type === 'step.intent')!;
    expect(intent.data).toMatchObject({ idempotencyKey: 'rec-1:pay#1', input: { amount: 5 }, reconcile: true });
    // replay answers the reconciled step with its recorded output, calling nothing
    const replay = await replayHistory(await recordedHistory(engine, 'rec-1'), [wf]);
    expect(replay.replays).toBe(true);
    expect(bank).toHaveLength(1);
  });

  it('fails the step for good once reconcile used up its retries, without calling the effect again', async () => {
    const bank: string[] = [];
    const wf = payment(
      'pay-reconcile-down',
      bank,
      {
        reconcile: async () => {
          throw new Error('bank status API unavailable');
        },
      },
      { ...fast, maxAttempts: 2 },
    );
    const engine = await engineWith(wf);
    await engine.start(wf, {}, { id: 'rec-2' });
    const view = await ended(engine, 'rec-2');
    expect(view.status).toBe('failed');
    expect(view.error).toContain('bank status API unavailable');
    expect(bank).toHaveLength(1);
  });

  it('runs the step again when reconcile says the effect did not happen', async () => {
    const bank: string[] = [];
    const wf = payment('pay-not-happened', bank, { reconcile: async () => ({ happened: false }) });
    const engine = await engineWith(wf);
    await engine.start(wf, {}, { id: 'rec-3' });
    const view = await ended(engine, 'rec-3');
    expect(view.output).toBe('paid#2');
    expect(view.steps[0]!.effect).toBe('repeated');
    expect(await types(engine, 'rec-3')).toContain('step.reconciled');
  });

  it('with effect: true, notes the unknown outcome and runs the step again (the intent alone)', async () => {
    const bank: string[] = [];
    const wf = payment('pay-intent', bank, true);
    const engine = await engineWith(wf);
    await engine.start(wf, {}, { id: 'rec-7' });
    const view = await ended(engine, 'rec-7');
    expect(view).toMatchObject({ status: 'success', output: 'paid#2' });
    expect(view.steps[0]!.effect).toBe('repeated');
    expect(await types(engine, 'rec-7')).toEqual([
      'step.started',
      'step.intent',
      'step.failed',
      'step.unknown',
      'step.started',
      'step.intent',
      'step.completed',
    ]);
  });

  it('waits for a person when atMostOnce has no reconcile; the decision is journaled with who made it', async () => {
    const bank: string[] = [];
    const wf = payment('pay-person', bank, { atMostOnce: true });
    const engine = await engineWith(wf);
    await engine.start(wf, {}, { id: 'rec-4' });
    await eventually(async () => (await engine.run('rec-4')).effectWait != null, 20_000);
    const waiting = await engine.run('rec-4');
    expect(waiting.status).toBe('waiting');
    expect(waiting.steps[0]!.effect).toBe('unknown');
    expect(waiting.waitingFor).toContain('unknown');
    await expect(decideEffect(engine.runtime, 'rec-4', { decision: 'maybe' as 'again', by: 'ana' })).rejects.toThrow(
      ValidationError,
    );
    await decideEffect(engine.runtime, 'rec-4', { decision: 'happened', by: 'ana', output: 'receipt 77' });
    const view = await ended(engine, 'rec-4');
    expect(view).toMatchObject({ status: 'success', output: 'receipt 77' });
    expect(bank).toHaveLength(1);
    const reconciled = (await engine.journal.readStream('run:rec-4')).find((e) => e.type === 'step.reconciled')!;
    expect(reconciled.data).toMatchObject({ happened: true, by: 'ana' });
    await expect(decideEffect(engine.runtime, 'rec-4', { decision: 'again', by: 'ana' })).rejects.toThrow(
      ConflictError,
    );
  });

  it("a person's 'again' runs the step once more; 'fail' fails it", async () => {
    const bank: string[] = [];
    const again = payment('pay-again', bank, { atMostOnce: true });
    const failing = payment('pay-fail', [], { atMostOnce: true });
    const engine = await engineWith(again, failing);
    await engine.start(again, {}, { id: 'rec-5' });
    await engine.start(failing, {}, { id: 'rec-6' });
    for (const id of ['rec-5', 'rec-6'])
      await eventually(async () => (await engine.run(id)).effectWait != null, 20_000);
    await decideEffect(engine.runtime, 'rec-5', { decision: 'again', by: 'ana' });
    await decideEffect(engine.runtime, 'rec-6', { decision: 'fail', by: 'bo' });
    expect(await ended(engine, 'rec-5')).toMatchObject({ status: 'success', output: 'paid#2' });
    const failed = await ended(engine, 'rec-6');
    expect(failed.status).toBe('failed');
    expect(failed.error).toContain('bo decided to fail it');
  });

  it('rejects a bad effect option naming the field', async () => {
    const wf = workflow('bad-effect', async (ctx) =>
      ctx.step('x', async () => 1, { effect: { atMostOnce: 'yes' } as unknown as EffectOptions<number> }),
    );
    const engine = await engineWith(wf);
    await engine.start(wf, {}, { id: 'bad-1' });
    const view = await ended(engine, 'bad-1');
    expect(view.status).toBe('failed');
    expect(view.error).toContain('effect.atMostOnce');
  });
});
