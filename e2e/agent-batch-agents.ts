import { appendFileSync } from 'node:fs';
import { defineAgent } from '../src/agents/agent.js';
import { AgentLedger } from '../src/agents/ledger.js';
import { sessions } from '../src/agents/service.js';
import type { Engine } from '../src/engine.js';

/**
 * The agent of the agent batch crash test, the same in the child and the parent: `digest` takes a conversation's
 * events in batches of up to 10, `timeout` after a batch's first, and writes one line per run to `log`:
 * `<run> <texts, comma-separated> <pid>`.
 */
export function batchLedger(engine: Engine, log: string, timeout = '30s'): AgentLedger {
  const digest = defineAgent('digest', {
    ledger: {},
    flow: { batch: { maxSize: 10, timeout } },
    background: async (input: { events: Array<{ payload: { text: string } }> }, ctx) => {
      await ctx.node('digest', async () => {
        const texts = input.events.map((e) => e.payload.text).join(',');
        appendFileSync(log, `${ctx.sessionId} ${texts} ${process.pid}\n`);
        return texts;
      });
    },
  });
  const service = sessions(engine, engine.store, { agents: [digest], tools: [] });
  return new AgentLedger(engine, engine.store, service, { defaultAgent: 'digest' });
}

export const arrival = (text: string) => ({
  conversation_id: 'c',
  user_id: 'u-1',
  source: 'crash-test',
  input_type: 'text',
  payload: { text },
  idempotency_key: `m-${text}`,
});
