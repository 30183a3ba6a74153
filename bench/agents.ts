import { defineAgent } from '../dist/agents/agent.js';
import { AgentLedger } from '../dist/agents/ledger.js';
import { sessions } from '../dist/agents/service.js';
import { createEngine } from '../dist/engine.js';

export interface AgentSizes {
  events: number;
  conversations: number;
  /** Webhook deliveries in flight at once. */
  posters: number;
}

/**
 * Inbound agent events through the ledger, in this process: `events` deliveries spread over
 * `conversations` (FIFO per conversation) for a no-op ledger agent, `posters` at a time.
 * `agent_events_per_s`: events from the first intake to the last run's end. `agent_intake_to_start_p99_ms`:
 * from an event's intake to its run's start (its `agent_runs.started_at`), which includes waiting
 * for the conversation's earlier runs.
 */
export async function benchAgents(database: string, sizes: AgentSizes): Promise<Record<string, number>> {
  const engine = await createEngine({ database });
  try {
    const noop = defineAgent('noop', { ledger: {}, background: async () => {} });
    const ledger = new AgentLedger(engine, engine.store, sessions(engine, engine.store, { agents: [noop] }), { defaultAgent: 'noop' });
    const post = (i: number) =>
      ledger.intake({
        conversation_id: `bench-c${i % sizes.conversations}`,
        user_id: 'bench',
        source: 'bench',
        input_type: 'text',
        payload: { i },
        idempotency_key: `bench-${i}`,
      });
    let next = 0;
    const started = performance.now();
    const runs: string[] = [];
    await Promise.all(
      Array.from({ length: sizes.posters }, async () => {
        while (next < sizes.events) runs.push((await post(next++)).run_id);
      }),
    );
    for (;;) {
      const done = await engine.store.agentRunList({ status: 'success', limit: sizes.events + 1 });
      if (done.length >= sizes.events) break;
      const failed = await engine.store.agentRunList({ status: 'failed', limit: 1 });
      if (failed.length > 0) throw new Error(`agent run ${failed[0]!.id} failed: ${failed[0]!.failure_reason}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const elapsed = (performance.now() - started) / 1000;
    const waits: number[] = [];
    for (const id of runs) {
      const run = (await engine.store.agentRunGet({ id }))!;
      const [event] = await engine.store.agentEventList({ run_id: id });
      waits.push(run.started_at! - event!.created_at);
    }
    waits.sort((a, b) => a - b);
    return {
      agent_events_per_s: sizes.events / elapsed,
      agent_intake_to_start_p99_ms: waits[Math.min(waits.length - 1, Math.ceil(waits.length * 0.99) - 1)]!,
    };
  } finally {
    await engine.close();
  }
}
