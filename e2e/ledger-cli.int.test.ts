import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { serve } from './child.js';

/** A module of the user's own agents and tools, as `runledger serve --agents` loads it (from the built package). */
function agentsModule(): string {
  const dir = mkdtempSync(join(tmpdir(), 'runledger-agents-'));
  const file = join(dir, 'agents.mjs');
  const dist = pathToFileURL(resolve('dist/index.js')).href;
  writeFileSync(
    file,
    `import { defineAgent, defineTool } from ${JSON.stringify(dist)};
export const shout = defineTool('shout', { risk: 'low', timeout: '5s', run: async ({ text }) => ({ loud: text.toUpperCase() }) });
export const echo = defineAgent('echo', {
  ledger: {},
  background: async (input, ctx) => {
    await ctx.node('answer', () => ctx.tool('shout', { text: input.events.map((e) => e.payload.text).join(' ') }));
  },
});
`,
  );
  return file;
}

/** fetch, once more when the server closed an idle kept-alive socket as the request went out ("other side closed"). */
async function request(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    if ((error as { cause?: { code?: string } }).cause?.code !== 'UND_ERR_SOCKET') throw error;
    return fetch(url, init);
  }
}

describe.each(backends)('the agent ledger through runledger serve and the CLI on $name', (backend) => {
  it('walks the README: intake → run → blocked refund → approve → done; and runs an agent of a --agents module', {
    timeout: 120_000,
  }, async () => {
    const database = await backend.create();
    const server = await serve(database, ['--agents', agentsModule()]);
    const agent = (...args: string[]) =>
      execFileSync(process.execPath, ['bin/runledger.js', 'agent', ...args, '--url', server.url], { encoding: 'utf8' });
    const post = async (body: Record<string, unknown>) => {
      const res = await request(`${server.url}/agent/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'u-7', source: 'whatsapp_webhook', input_type: 'text', ...body }),
      });
      return { status: res.status, body: await res.json() };
    };
    try {
      const event = {
        conversation_id: 'c-42',
        payload: { text: 'I want a refund for order 1234' },
        idempotency_key: 'wamid.1',
      };
      const first = await post(event);
      expect(first.status).toBe(202);
      expect(await post(event)).toEqual({ status: 200, body: { ...first.body, duplicate: true } });
      const runId = first.body.run_id as string;

      const pending = await eventually(() => {
        const lines = agent('approvals').split('\n').filter(Boolean);
        return lines.length === 1 ? lines[0]! : undefined;
      }, 30_000);
      expect(pending).toMatch(
        new RegExp(
          `^tc_\\w+  issue_refund \\(high\\)  run=${runId}  input=\\{.*"order_id":"1234".*\\}  pending until `,
        ),
      );
      const waiting = agent('show', runId);
      expect(waiting).toMatch(new RegExp(`^${runId}  waiting`));
      expect(waiting).toContain('issue_refund (high)  blocked  approval=pending');
      const toolCall = pending.split(' ')[0]!;
      // the run is suspended once no pass of it runs: a decision is then seen at once (see `suspended` in sessions.int.test.ts)
      const engine = await createEngine({ database, workers: false });
      try {
        await eventually(async () => {
          if ((await engine.run(runId)).status !== 'waiting') return false;
          const running = await engine.store.taskList({ queue: 'runledger.runs', state: 'running', limit: 1000 });
          return !running.some((task) => task.orderingKey === runId);
        }, 30_000);
      } finally {
        await engine.close();
      }
      expect(agent('approve', toolCall, '--by', 'ana', '--reason', 'within policy')).toBe(
        `${toolCall} issue_refund: approved by ana\n`,
      );
      const done = await eventually(() => {
        const shown = agent('show', runId);
        return shown.startsWith(`${runId}  success`) ? shown : undefined;
      }, 30_000);
      expect(done).toContain('step  classify');
      expect(done).toContain('issue_refund (high)  ok  approval=approved by ana');
      expect(done).toContain('checkpoint  reply  {"text":"Refunded 42 for order 1234."}');
      expect(agent('runs', '--conversation', 'c-42')).toMatch(new RegExp(`^${runId}  success`));
      expect(() => agent('reject', toolCall, '--by', 'bob')).toThrow(/409/);
      expect((await (await request(`${server.url}/sessions/${runId}`)).json()).status).toBe('success');

      const echoed = await post({ conversation_id: 'c-43', agent: 'echo', payload: { text: 'hello' } });
      const run = await eventually(async () => {
        const r = await (await request(`${server.url}/agent/runs/${echoed.body.run_id}`)).json();
        return r.status === 'success' ? r : undefined;
      }, 30_000);
      expect(run.checkpoints[0].state).toEqual({ loud: 'HELLO' });
      expect(run.tool_calls.map((c: { tool_name: string; status: string }) => [c.tool_name, c.status])).toEqual([
        ['shout', 'ok'],
      ]);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n--- runledger serve:\n${server.output().slice(-4000)}`);
    } finally {
      server.proc.kill('SIGKILL');
    }
  });
});
