import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { backends } from '../src/testing/backends.js';
import { serve, type Served } from './child.js';
import { killMidAnswer } from './run-stream.js';

const KEY = 'sk-stored-e2e-51c0';

async function call(url: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

/**
 * The crash test of ctx.generate, for a stored workflow's `generate` step: a real `runledger serve` runs a definition
 * saved over the API (its key a stored secret) against the loopback mock model; SIGKILL mid-answer, a new serve on the
 * same database and data folder, the client reconnects with its Last-Event-ID and reads the rest: no gap, no repeat,
 * and the model was asked to continue the journaled prefix, not for it again.
 */
describe.each(backends)('a stored generate step across a kill -9 of serve on $name', (backend) => {
  let mock: MockServices;
  const servers: Served[] = [];
  beforeAll(async () => {
    mock = await startMockServices();
  });
  afterEach(() => {
    for (const s of servers.splice(0)) s.proc.kill('SIGKILL');
    mock.reset();
  });
  afterAll(() => mock.close());

  it('continues the answer from the journal after the crash; the client reads it whole, once', async () => {
    mock.model.configure({ words: 80, delay_ms: 50 });
    const database = await backend.create();
    const dataDir = mkdtempSync(join(tmpdir(), 'rl-generate-stored-'));
    const env = {
      RUNLEDGER_DATA_DIR: dataDir,
      RUNLEDGER_LEASE_MS: '1500',
      RUNLEDGER_POLL_MS: '100',
      RUNLEDGER_HTTP_ALLOW: '127.0.0.1',
    };
    const first = await serve(database, [], env);
    servers.push(first);
    expect((await call(first.url, 'POST', '/secrets', { name: 'llm_key', value: KEY })).status).toBe(201);
    const created = await call(first.url, 'POST', '/workflows', {
      name: 'story',
      steps: [
        {
          id: 'answer',
          type: 'generate',
          config: {
            model: { url: `${mock.url}/v1`, model: 'mock-1', api_key_secret: 'llm_key' },
            messages: [{ role: 'user', content: 'what survives {{trigger.what}}?' }],
          },
        },
      ],
    });
    expect(created.status).toBe(201);
    const started = await call(first.url, 'POST', `/workflows/${created.body.id}/execute`, {
      trigger_data: { what: 'a crash' },
    });
    expect(started.status).toBe(202);
    const id = started.body.execution_id as string;
    const full = mock.model.answer([{ role: 'user', content: 'what survives a crash?' }]);

    const { second, seam: resumed } = await killMidAnswer(first, id, full, async () => {
      const next = await serve(database, [], env);
      servers.push(next);
      return next;
    });
    const seam = resumed.at;
    const requests = mock.model.requests();
    expect(requests).toHaveLength(2);
    expect(requests[1]!.messages.at(-1)).toEqual({ role: 'assistant', content: full.slice(0, seam) });
    expect(requests[1]).toMatchObject({ prefix: seam, continued: true, outcome: 'done' });

    const record = await call(second.url, 'GET', `/workflows/${created.body.id}/executions/${id}`);
    expect(record.body.status).toBe('success');
    expect(record.body.steps[0].output).toMatchObject({ text: full, finish_reason: 'stop' });
    expect(record.body.steps[0].output.usage).toMatchObject({ resumed_at: seam, attempts: 2 });
    const events = await call(second.url, 'GET', `/runs/${id}/events?limit=1000`);
    expect(JSON.stringify(events.body)).not.toContain(KEY);
  }, 90_000);
});
