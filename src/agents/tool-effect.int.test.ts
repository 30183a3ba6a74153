import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { ValidationError } from '../errors.js';
import { decideEffect } from '../runtime/pass/effect-decision.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import { AgentLedger } from './ledger.js';
import { sessions } from './service.js';
import { defineTool, type ToolEffect } from './tools.js';

/**
 * Effect tools in process: the first call of `refund` goes through but hangs past the tool's timeout, so its outcome is
 * unknown (e2e/effect-agent-crash.int.test.ts kills a process between the call and its record for the same case).
 */
describe.each(backends)('effect tools in the agent ledger on $name', (backend) => {
  let engine: Engine;
  let close: () => Promise<void>;
  let refunds: string[];
  let ledger: AgentLedger;

  const start = (effect: ToolEffect) => {
    const refund = defineTool('refund', {
      risk: 'low',
      timeout: '100ms',
      retry: { maxAttempts: 3, backoff: { base: '10ms', factor: 1 } },
      run: async (_input, { idempotencyKey, signal }) => {
        refunds.push(idempotencyKey);
        if (refunds.length === 1) await new Promise((_, reject) => signal.addEventListener('abort', reject));
        return { refund: refunds.length };
      },
      effect,
    });
    const payer = defineAgent('payer', {
      ledger: {},
      background: async (_input, ctx) => {
        await ctx.node('refund', () => ctx.tool('refund', { order: 7 }));
      },
    });
    ledger = new AgentLedger(
      engine,
      engine.store,
      sessions(engine, engine.store, { agents: [payer], tools: [refund] }),
      {
        defaultAgent: 'payer',
      },
    );
    return ledger.intake({ conversation_id: 'c-1', user_id: 'u-1', source: 'test', input_type: 'text', payload: {} });
  };

  beforeEach(async () => {
    refunds = [];
    const t = await testEngine(backend, { pollMs: 50 });
    engine = t.engine;
    close = t.close;
  });
  afterEach(() => close());

  it('retries a reconcile that throws, then records the call reconciled, the tool run once', async () => {
    let asked = 0;
    const { run_id } = await start({
      reconcile: async (key) => {
        if (++asked < 2) throw new Error('refund status API unavailable');
        return refunds.includes(key) ? { happened: true, output: { refund: 'found' } } : { happened: false };
      },
    });
    const run = await eventually(async () => {
      const r = await ledger.run(run_id);
      return r.status === 'success' ? r : undefined;
    }, 20_000);
    expect(run.tool_calls[0]).toMatchObject({ status: 'reconciled', output: { refund: 'found' } });
    expect(refunds).toHaveLength(1);
    expect(asked).toBe(2);
  });

  it('with atMostOnce, shows the call unknown and the run waiting until a person decides', async () => {
    const { run_id } = await start({ atMostOnce: true });
    const waiting = await eventually(async () => {
      const r = await ledger.run(run_id);
      return r.tool_calls[0]?.status === 'unknown' && r.status === 'waiting' ? r : undefined;
    }, 20_000);
    expect(waiting.waiting_for).toContain('unknown');
    await decideEffect(engine.runtime, run_id, { decision: 'happened', by: 'ana', output: { refund: 'by hand' } });
    const run = await eventually(async () => {
      const r = await ledger.run(run_id);
      return r.status === 'success' ? r : undefined;
    }, 20_000);
    expect(run.tool_calls[0]).toMatchObject({ status: 'reconciled', output: { refund: 'by hand' } });
    expect(refunds).toHaveLength(1);
  });

  it('refuses a bad effect on a tool, naming the field', () => {
    const bad = (effect: unknown) => () =>
      defineTool('t', { risk: 'low', timeout: '1s', run: async () => 1, effect: effect as ToolEffect });
    expect(bad({ reconcile: 'GET /x' })).toThrow(ValidationError);
    expect(bad({ reconcile: 'GET /x' })).toThrow(/effect\.reconcile/);
    expect(bad({ atMostOnce: 1 })).toThrow(/effect\.atMostOnce/);
    expect(bad({ retry: true })).toThrow(/effect\.retry/);
  });
});
