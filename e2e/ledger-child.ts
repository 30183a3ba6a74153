/**
 * A worker process of the agent ledger's crash tests: `node --import tsx e2e/ledger-child.ts <database> <log>`.
 * Runs the ledger agents below until killed, printing `ready` once it works. Each node appends a
 * line to <log> synchronously when it starts and ends, so the parent sees where a kill landed and
 * what ran again.
 */
import { appendFileSync } from 'node:fs';
import { defineAgent, type Agent } from '../src/agents/agent.js';
import { sessions } from '../src/agents/service.js';
import { defineTool, type Tool } from '../src/agents/tools.js';
import { createEngine } from '../src/engine.js';

/** The agents and tools of the tests; the parent process defines the same ones to take events for them. */
export function ledgerAgents(log: string): { agents: Agent[]; tools: Tool[] } {
  const line = (text: string) => appendFileSync(log, `${text}\n`);
  const effect = defineTool('effect', {
    risk: 'low',
    timeout: '5s',
    run: async (_input, { idempotencyKey }) => (line(`effect ${idempotencyKey}`), { ok: true }),
  });
  // one node: its start and end show the order the runs of a conversation ran in
  const ordered = defineAgent('ordered', {
    ledger: {},
    background: async (
      input: { conversation_id: string; events: Array<{ event_id: string; payload: { seq: number; ms: number } }> },
      ctx,
    ) => {
      await ctx.node('work', async () => {
        const { seq, ms } = input.events[0]!.payload;
        line(`start ${input.conversation_id} ${seq} ${ctx.sessionId} ${process.pid}`);
        await new Promise((resolve) => setTimeout(resolve, ms));
        line(`end ${input.conversation_id} ${seq} ${ctx.sessionId}`);
        return seq;
      });
    },
  });
  // three nodes, the middle one slow: a kill lands in it
  const steps = defineAgent('steps', {
    ledger: {},
    background: async (input: { events: Array<{ payload: { ms: number } }> }, ctx) => {
      const a = await ctx.node('a', async () => {
        line(`node a ${ctx.sessionId}`);
        await ctx.tool('effect', { node: 'a' });
        return 1;
      });
      const b = await ctx.node('b', async () => {
        line(`node b ${ctx.sessionId}`);
        await new Promise((resolve) => setTimeout(resolve, input.events[0]!.payload.ms));
        return a + 1;
      });
      await ctx.node('c', async () => (line(`node c ${ctx.sessionId}`), b + 1));
    },
  });
  return { agents: [ordered, steps], tools: [effect] };
}

if (process.argv[1]?.endsWith('ledger-child.ts')) {
  const [database, log] = process.argv.slice(2);
  const engine = await createEngine({ database: database!, pollMs: 100, leaseMs: 1000 });
  sessions(engine, engine.store, ledgerAgents(log!));
  process.stdout.write('ready\n');
}
