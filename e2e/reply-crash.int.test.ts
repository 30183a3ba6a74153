import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ReplyDelta } from '../src/chat/reply.js';
import type { Message } from '../src/chat/message.js';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { watch } from '../src/testing/socket.js';
import { serve, type Served } from './child.js';

const QUESTION = 'what survives a crash?';

/**
 * The brief's crash test for the chat reply worker: a real `runledger serve` answers chat messages with our loopback
 * OpenAI-compatible model (RUNLEDGER_LLM_URL, through the AI SDK), which streams slowly; a client holds the channel's
 * WebSocket; the server is killed with SIGKILL mid-answer and started again, and the client reconnects. The stored
 * reply is whole and stored once, no piece of text reaches the client twice, and the model's second request
 * continued the journaled prefix instead of answering from the start.
 */
describe.each(backends)('the chat reply worker across a kill -9 of serve on $name', (backend) => {
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

  const start = async (database: string, dataDir: string) => {
    const s = await serve(database, [], {
      RUNLEDGER_LLM_URL: `${mock.url}/v1`,
      RUNLEDGER_LLM_MODEL: 'mock-1',
      RUNLEDGER_DATA_DIR: dataDir,
      RUNLEDGER_LEASE_MS: '1500',
      RUNLEDGER_POLL_MS: '100',
    });
    servers.push(s);
    return s;
  };

  it('takes the answer up at the journaled text: stored whole, once, no text repeated to the client', async () => {
    mock.model.configure({ words: 80, delay_ms: 50 });
    const database = await backend.create();
    const dataDir = mkdtempSync(join(tmpdir(), 'rl-reply-crash-'));
    const first = await start(database, dataDir);
    const before = watch(first.url, 'help');
    await before.open;
    const posted = await fetch(`${first.url}/channels/help/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ event_id: 'q-1', sender_id: 'u1', role: 'user', content: QUESTION }),
    });
    expect(posted.status).toBe(201);
    const full = mock.model.answer([{ role: 'user', content: QUESTION }]);
    const deltas = (c: { frames: { type: string }[] }) =>
      c.frames.filter((f) => f.type === 'delta') as unknown as ReplyDelta[];
    const length = (list: ReplyDelta[]) => list.reduce((n, d) => n + d.delta.length, 0);

    // mid-answer: the client has some text, the model has more to send
    await eventually(() => length(deltas(before)) > full.length / 3, 20_000);
    first.proc.kill('SIGKILL');
    await first.exited;
    await before.closed;
    const had = deltas(before);

    const second = await start(database, dataDir);
    const after = watch(second.url, 'help', 1);
    await after.open;
    const reply = await eventually(() => after.messages.find((m: Message) => m.role === 'ai'), 30_000);
    after.ws.close();

    // the stored reply is whole, and there is one
    expect(reply).toMatchObject({ event_id: 'reply:q-1', content: full });
    const history = await (await fetch(`${second.url}/channels/help/messages`)).json();
    expect(history.messages.map((m: Message) => m.role)).toEqual(['user', 'ai']);

    // no text twice: every piece is the answer's text at its offset, each after the one before it ended
    const pieces = [...had, ...deltas(after)];
    let end = 0;
    for (const p of pieces) {
      expect(p).toMatchObject({ event_id: 'reply:q-1', attempt: 1, run_id: reply.metadata?.run_id });
      expect(p.at).toBeGreaterThanOrEqual(end);
      expect(p.delta).toBe(full.slice(p.at, p.at + p.delta.length));
      end = p.at + p.delta.length;
    }
    expect(length(deltas(after))).toBeGreaterThan(0);

    // the model was asked twice: the second request continued the journaled prefix and streamed only what followed
    const requests = mock.model.requests();
    expect(requests).toHaveLength(2);
    expect(requests[0]!.outcome).toBe('gone');
    const seam = requests[1]!.prefix;
    expect(seam).toBeGreaterThanOrEqual(length(had));
    expect(requests[1]!.messages.at(-1)).toEqual({ role: 'assistant', content: full.slice(0, seam) });
    expect(requests[1]).toMatchObject({ continued: true, outcome: 'done' });
    expect(requests[1]!.chunks).toBe(full.slice(seam).match(/\s*\S+/g)!.length);
  }, 90_000);
});
