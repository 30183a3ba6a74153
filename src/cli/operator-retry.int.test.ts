import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../agents/agent.js';
import { openApp } from '../app/open.js';
import { createLogger } from '../observe/log.js';
import { backends } from '../testing/backends.js';
import { eventually } from '../testing/engine.js';
import { main } from './main.js';
import { output } from './output.js';

/** An agent the command line's own assembly does not have (it is in no --agents module there). */
const elsewhere = defineAgent('elsewhere', {
  ledger: { retry: { maxAttempts: 1 } },
  background: async (_input, ctx) => {
    await ctx.node('call', async () => {
      throw new Error('upstream is down');
    });
  },
});

describe.each(backends)('runledger bulk retry --database on agent runs on $name', (backend) => {
  it("redrives a failed agent run's event as the server does, and skips one whose agent the command line lacks", async () => {
    const database = await backend.create();
    const app = await openApp({
      database,
      secretKey: randomBytes(32),
      logger: createLogger('silent', false),
      agents: [elsewhere],
      pollMs: 100,
    });
    try {
      const event = (text: string, agent?: string) =>
        app.ledger.intake({
          conversation_id: `c-${text}`,
          user_id: 'u-1',
          source: 'whatsapp_webhook',
          input_type: 'text',
          payload: { text, fail_times: 99, sleep_ms: 0 },
          ...(agent ? { agent } : {}),
        });
      const sample = await event('sample');
      const other = await event('other', 'elsewhere');
      for (const e of [sample, other])
        await eventually(async () => (await app.ledger.event(e.event_id)).status === 'failed' || undefined, 30_000);

      let printed = '';
      const args = ['bulk', 'retry', '--database', database, '--by', 'ci', '--reason', 'upstream is back', '--json'];
      await main(
        ['node', 'runledger', ...args],
        output((text) => (printed += text), false),
      );
      const result = JSON.parse(printed);
      expect(result).toMatchObject({
        ids: [sample.run_id],
        skipped: [{ id: other.run_id, why: expect.stringContaining('no agent is named "elsewhere"') }],
      });
      const newRunId = result.started[sample.run_id] as string;
      expect(newRunId).toMatch(/^ses_/);
      expect(await app.ledger.event(sample.event_id)).toMatchObject({
        run_id: newRunId,
        attempt_count: expect.any(Number),
      });
      expect(await app.ledger.run(newRunId)).toMatchObject({ retry_of: sample.run_id, event_id: sample.event_id });
      expect((await app.ledger.run(sample.run_id)).status).toBe('failed');
      expect((await app.ledger.event(other.event_id)).status).toBe('failed');
    } finally {
      await app.close();
    }
  });
});
