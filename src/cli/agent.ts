import type { Command } from 'commander';
import { userInfo } from 'node:os';
import type { Agent } from '../agents/agent.js';
import type { AgentEventRecord, AgentRunDetail, AgentRunRecord } from '../agents/ledger.js';
import type { Tool } from '../agents/tools.js';
import { loadModule } from './load-module.js';
import { client, remote } from './options.js';

function runLine(r: AgentRunRecord): string {
  return `${r.id}  ${r.status.padEnd(8)}  ${r.created_at}  ${r.agent}  conversation=${r.conversation_id ?? '-'}${r.failure_reason ? `  ${r.failure_reason}` : ''}`;
}

function eventLine(e: AgentEventRecord): string {
  return `${e.id}  ${e.status.padEnd(10)}  ${e.created_at}  ${e.source}  conversation=${e.conversation_id}  user=${e.user_id}  attempts=${e.attempt_count}  run=${e.run_id}${e.last_error ? `  ${e.last_error}` : ''}`;
}

/** A run as `runledger agent show` prints it: the run, then its steps, tool calls and checkpoints in order. */
export function formatRun(run: AgentRunDetail): string[] {
  const lines = [
    runLine(run),
    `  events: ${run.events.map((e) => `${e.id} (${e.status}, attempts ${e.attempt_count})`).join(', ') || '-'}`,
  ];
  for (const s of run.steps)
    lines.push(
      `  step  ${s.node.padEnd(12)} #${s.seq} attempt ${s.attempt}  ${s.status}${s.latency_ms !== null ? `  ${s.latency_ms} ms` : ''}${s.error ? `  ${s.error}` : ''}`,
    );
  for (const c of run.tool_calls) {
    const approval = c.approval_status
      ? `  approval=${c.approval_status}${c.approval_by ? ` by ${c.approval_by}` : ''}`
      : '';
    lines.push(
      `  tool  ${c.id}  ${c.tool_name} (${c.risk_level})  ${c.status}${approval}${c.error ? `  ${c.error}` : ''}`,
    );
  }
  for (const k of run.checkpoints) lines.push(`  checkpoint  ${k.node}  ${JSON.stringify(k.state)}`);
  return lines;
}

/** `runledger agent …`: the agent run ledger of a running server, over its HTTP API. */
export function agentCommands(program: Command, print: (line: string) => void): void {
  const agent = program
    .command('agent')
    .description('the agent run ledger: runs, their steps and tool calls, and approvals');
  remote(agent.command('runs'))
    .description('agent runs, newest first')
    .option(
      '--conversation <id>',
      "one conversation's runs, oldest first (a redriven event's run keeps its event's place: see started_at)",
    )
    .option('--user <id>')
    .option('--status <status>', 'pending | running | waiting | sleeping | success | failed')
    .option('--limit <n>', 'at most this many', '20')
    .action(async (options) => {
      const c = client(options);
      const limit = Number(options.limit);
      const page = options.conversation
        ? await c.conversationRuns(options.conversation, { limit })
        : await c.agentRuns({
            limit,
            ...(options.user ? { user_id: options.user } : {}),
            ...(options.status ? { status: options.status } : {}),
          });
      const runs =
        options.conversation && (options.user || options.status)
          ? page.runs.filter(
              (r) => (!options.user || r.user_id === options.user) && (!options.status || r.status === options.status),
            )
          : page.runs;
      for (const r of runs) print(runLine(r));
    });
  remote(agent.command('events'))
    .description('inbound events, newest first')
    .option('--status <status>', 'pending | processing | done | failed')
    .option('--conversation <id>')
    .option('--user <id>')
    .option('--source <source>')
    .option('--limit <n>', 'at most this many', '20')
    .option('--cursor <event-id>', 'the page after this event (the next_cursor a page printed)')
    .action(async (options) => {
      const filters = {
        status: options.status,
        conversation_id: options.conversation,
        user_id: options.user,
        source: options.source,
        cursor: options.cursor,
      };
      const page = await client(options).agentEvents({
        limit: Number(options.limit),
        ...Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined)),
      });
      if (options.json) return print(JSON.stringify(page, null, 2));
      for (const e of page.events) print(eventLine(e));
      if (page.next_cursor) print(`next: --cursor ${page.next_cursor}`);
    });
  remote(agent.command('redrive <event-id>'))
    .description('a failed event again: a new run handles it, linked to the old one')
    .option('--by <name>', 'who redrives (default: this user)')
    .option('--reason <text>')
    .action(async (id: string, options) => {
      const { event, run_id, retry_of } = await client(options).redriveAgentEvent(id, {
        by: options.by ?? userInfo().username,
        ...(options.reason ? { reason: options.reason } : {}),
      });
      print(`${event.id} ${event.status}: run ${run_id} (retry of ${retry_of})`);
    });
  remote(agent.command('show <run-id>'))
    .description('one run with its events, steps, tool calls and checkpoints')
    .action(async (id: string, options) => {
      const run = await client(options).agentRun(id);
      if (options.json) return print(JSON.stringify(run, null, 2));
      for (const line of formatRun(run)) print(line);
    });
  remote(agent.command('approvals'))
    .description('tool calls waiting for a decision')
    .option('--status <status>', 'pending | approved | rejected | expired', 'pending')
    .action(async (options) => {
      for (const c of (await client(options).approvals({ status: options.status })).tool_calls) {
        print(
          `${c.id}  ${c.tool_name} (${c.risk_level})  run=${c.run_id}  input=${JSON.stringify(c.input)}  ${c.approval_status}${c.approval_expires_at ? ` until ${c.approval_expires_at}` : ''}`,
        );
      }
    });
  for (const decision of ['approve', 'reject'] as const) {
    remote(agent.command(`${decision} <tool-call-id>`))
      .description(`${decision} a tool call waiting for approval`)
      .option(
        '--by <name>',
        'who decides, without a token only (default: this user); with one, the server records its key',
      )
      .option('--reason <text>')
      .action(async (id: string, options) => {
        const by = options.by ?? userInfo().username;
        const { tool_call: c, duplicate } = await client(options).decide(id, decision, {
          by,
          ...(options.reason ? { reason: options.reason } : {}),
        });
        print(
          `${c.id} ${c.tool_name}: ${c.approval_status} by ${c.approval_by}${duplicate ? ' (already decided)' : ''}`,
        );
      });
  }
}

/** The agents (`defineAgent`) and tools (`defineTool`) a module exports, directly or in arrays; `load`: see `loadModule`. */
export async function loadAgents(
  path: string,
  load?: (file: string) => Promise<Record<string, unknown>>,
): Promise<{ agents: Agent[]; tools: Tool[] }> {
  const values = [
    ...new Set(
      (await loadModule('--agents', path, undefined, load)).flatMap((value) =>
        Array.isArray(value) ? value : [value],
      ),
    ),
  ];
  const agents = values.filter(
    (v): v is Agent =>
      typeof v === 'object' &&
      v !== null &&
      ((v as Agent).kind === 'code' || (v as Agent).kind === 'http') &&
      typeof (v as Agent).name === 'string',
  );
  const tools = values.filter(
    (v): v is Tool =>
      typeof v === 'object' &&
      v !== null &&
      typeof (v as Tool).run === 'function' &&
      typeof (v as Tool).risk === 'string' &&
      typeof (v as Tool).timeoutMs === 'number',
  );
  if (agents.length === 0 && tools.length === 0)
    throw new Error(`${path} exports no agent (defineAgent) and no tool (defineTool)`);
  return { agents, tools };
}
