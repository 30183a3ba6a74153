import { appendFileSync } from 'node:fs';
import { defineAgent } from '../src/agents/agent.js';
import { AgentLedger } from '../src/agents/ledger.js';
import { sessions } from '../src/agents/service.js';
import type { Engine } from '../src/engine.js';

/**
 * The agent of the agent debounce crash test: `chat` debounces a conversation (`period`, at most 30 s) and writes one
 * line per run to `log`: `<run> <texts, comma-separated> <pid>`.
 */
export function debounceLedger(engine: Engine, log: string, period = '4s'): AgentLedger {
  const chat = defineAgent('chat', {
    ledger: {},
    flow: { debounce: { period, maxWait: '30s' } },
    background: async (input: { events: Array<{ payload: { text: string } }> }, ctx) => {
      await ctx.node('answer', async () => {
        const texts = input.events.map((e) => e.payload.text).join(',');
        appendFileSync(log, `${ctx.sessionId} ${texts} ${process.pid}\n`);
        return texts;
      });
    },
  });
  const service = sessions(engine, engine.store, { agents: [chat], tools: [] });
  return new AgentLedger(engine, engine.store, service, { defaultAgent: 'chat' });
}

export const arrival = (text: string) => ({
  conversation_id: 'c',
  user_id: 'u-1',
  source: 'crash-test',
  input_type: 'text',
  payload: { text },
  idempotency_key: `m-${text}`,
});
