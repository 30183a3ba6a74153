/**
 * A worker process for the effect tool crash test:
 * `node --import tsx e2e/effect-agent-child.ts <database> <log> [crash point]`.
 * Takes one agent event (idempotent: a restart takes nothing new) for a ledger agent whose one node calls tool
 * `refund`, a side effect: it appends its idempotency key to <log> (the outside world), and its `reconcile` reads the
 * log back. Works until the agent's run ended.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { defineAgent, type Agent } from '../src/agents/agent.js';
import { AgentLedger } from '../src/agents/ledger.js';
import { sessions } from '../src/agents/service.js';
import { defineTool, type Tool } from '../src/agents/tools.js';
import { armCrashPoint, type CrashPointName } from '../src/crash.js';
import { createEngine, type Engine } from '../src/engine.js';

/** The agent and its tool; the parent process defines the same ones to read the ledger. */
export function payerAgents(log: string): { agents: Agent[]; tools: Tool[] } {
  const refund = defineTool('refund', {
    risk: 'low',
    timeout: '5s',
    run: async (input: { order: number }, { idempotencyKey }) => {
      appendFileSync(log!, `${idempotencyKey}\n`);
      return { refunded: input.order, by: 'call' };
    },
    effect: {
      reconcile: async (key) =>
        readFileSync(log!, 'utf8').split('\n').includes(key)
          ? { happened: true, output: { refunded: 7, by: 'reconcile' } }
          : { happened: false },
    },
  });
  const payer = defineAgent('payer', {
    ledger: {},
    background: async (_input, ctx) => {
      await ctx.node('refund', async () => ctx.tool('refund', { order: 7 }));
    },
  });

  return { agents: [payer], tools: [refund] };
}

/** The ledger of `engine` for the agent, and the run of the one event (taken once: its idempotency key). */
export async function payerRun(engine: Engine, log: string) {
  const ledger = new AgentLedger(engine, engine.store, sessions(engine, engine.store, payerAgents(log)), {
    defaultAgent: 'payer',
  });
  const { run_id } = await ledger.intake({
    conversation_id: 'c-1',
    user_id: 'u-1',
    source: 'test',
    input_type: 'text',
    payload: { text: 'refund order 7' },
    idempotency_key: 'evt-1',
  });
  return { ledger, runId: run_id };
}

if (process.argv[1]?.endsWith('effect-agent-child.ts')) {
  const [database, log, point] = process.argv.slice(2);
  const engine = await createEngine({ database: database!, pollMs: 100, leaseMs: 1000 });
  if (point) armCrashPoint(point as CrashPointName);
  const { ledger, runId } = await payerRun(engine, log!);
  while (!['success', 'failed'].includes((await ledger.run(runId)).status))
    await new Promise((resolve) => setTimeout(resolve, 100));
  await engine.close();
}
