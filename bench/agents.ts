import { defineAgent } from '../dist/agents/agent.js';
import { AgentLedger } from '../dist/agents/ledger.js';
import { sessions } from '../dist/agents/service.js';
import { createEngine, engineStore } from '../dist/engine.js';

export interface AgentSizes {
  events: number;
  conversations: number;
  /** Webhook deliveries in flight at once. */
  posters: number;
  /** Events sent one at a time, each into a conversation of its own with nothing else running. */
  idle: number;
}

/**
 * Inbound agent events through the ledger, in this process: `events` deliveries spread over
 * `conversations` (FIFO per conversation) for a no-op ledger agent, `posters` at a time.
 * `agent_events_per_s`: events from the first intake to the last run's end. `agent_intake_to_start_p99_ms`:
 * from an event's intake to its run's start (its `agent_runs.started_at`), which includes waiting
 * for the conversation's earlier runs. `agent_idle_intake_to_start_p99_ms`: the same for `idle`
 * events sent one at a time into idle conversations (with `idle` ≤ 100, the p99 is the slowest one).
 */
export async function benchAgents(database: string, sizes: AgentSizes): Promise<Record<string, number>> {
  const engine = await createEngine({ database });
  try {
    const noop = defineAgent('noop', { ledger: {}, background: async () => {} });
    const ledger = new AgentLedger(
      engine,
      engineStore(engine),
      sessions(engine, engineStore(engine), { agents: [noop] }),
      {
        defaultAgent: 'noop',
      },
    );
    const post = (i: number, conversation: string) =>
      ledger.intake({
        conversation_id: conversation,
        user_id: 'bench',
        source: 'bench',
        input_type: 'text',
        payload: { i },
        idempotency_key: `bench-${i}`,
      });
    let next = 0;
    const started = performance.now();
    const runs: string[] = [];
    const last = new Map<string, string>();
    await Promise.all(
      Array.from({ length: sizes.posters }, async () => {
        while (next < sizes.events) {
          const i = next++;
          const conversation = `bench-c${i % sizes.conversations}`;
          const { run_id } = await post(i, conversation);
          runs.push(run_id);
          last.set(conversation, run_id);
        }
      }),
    );
    // a conversation's runs end in arrival order: its last run's end is theirs. Waiting on one run at a
    // time (woken by the journal) costs the engine next to nothing, unlike listing every run to count them
    for (const id of last.values()) await engine.runs.wait(id, { timeoutMs: 600_000 });
    const elapsed = (performance.now() - started) / 1000;
    const unfinished = await engineStore(engine).agentRunList({ status: 'success', limit: sizes.events + 1 });
    if (unfinished.length < sizes.events) {
      const failed = await engineStore(engine).agentRunList({ status: 'failed', limit: 1 });
      throw new Error(`${sizes.events - unfinished.length} agent runs did not succeed: ${failed[0]?.failure_reason}`);
    }
    const waits = await startWaits(engine, runs);
    const idle: string[] = [];
    for (let i = 0; i < sizes.idle; i++) {
      const { run_id } = await post(sizes.events + i, `bench-idle-${i}`);
      await engine.runs.wait(run_id, { timeoutMs: 60_000 });
      idle.push(run_id);
    }
    return {
      agent_events_per_s: sizes.events / elapsed,
      agent_intake_to_start_p99_ms: p99(waits),
      agent_idle_intake_to_start_p99_ms: p99(await startWaits(engine, idle)),
    };
  } finally {
    await engine.close();
  }
}

/** Per run, from its event's intake to its start (ms). */
async function startWaits(engine: Awaited<ReturnType<typeof createEngine>>, runs: string[]): Promise<number[]> {
  const waits: number[] = [];
  for (const id of runs) {
    const run = (await engineStore(engine).agentRunGet({ id }))!;
    const [event] = await engineStore(engine).agentEventList({ run_id: id });
    waits.push(run.started_at! - event!.created_at);
  }
  return waits;
}

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)]!;
}
