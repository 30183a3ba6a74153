import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { Model } from '../runtime/model.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { refusal } from '../testing/socket.js';
import { useServer } from './test-server.js';

const TOKEN = 'run-ws-token-0123456789';

/** A model that streams ten words 40 ms apart: several text batches, some after a client connects. */
const slow: Model = {
  id: 'slow-words',
  continuation: 'restart',
  async *stream() {
    for (let i = 1; i <= 10; i++) {
      await new Promise((resolve) => setTimeout(resolve, 40));
      yield { type: 'text', text: `w${i} ` };
    }
    yield { type: 'finish', finishReason: 'stop', inputTokens: 1, outputTokens: 10 };
  },
};
const told = workflow('ws-told', async (ctx) => (await ctx.generate('answer', { model: slow, messages: ask })).text);
const ask = [{ role: 'user' as const, content: 'tell' }];

interface Frame {
  type: string;
  id: number;
  at?: number;
  text?: string;
}

/** A client of `/runs/{id}/ws` from `after`: its frames, and how it closed. */
function read(url: string, id: string, after = 0, token = TOKEN) {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/runs/${id}/ws?after=${after}&token=${token}`);
  const frames: Frame[] = [];
  ws.on('message', (data) => frames.push(JSON.parse(data.toString())));
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  return {
    frames,
    closed,
    text: () =>
      frames
        .filter((f) => f.type === 'text')
        .map((f) => f.text)
        .join(''),
  };
}

describe.each(backends)("a run's text over a WebSocket on $name", (backend) => {
  const served = useServer(backend, { token: TOKEN, workers: true, pollMs: 100, codeWorkflows: [told] });
  const start = async () => {
    const response = await fetch(`${served.server.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ workflow: 'ws-told' }),
    });
    return ((await response.json()) as { run_id: string }).run_id;
  };

  it('sends the text as it is journaled, then generated and end, and closes; after= resumes past what was read', async () => {
    const id = await start();
    const live = read(served.server.url, id);
    expect(await live.closed).toBe(1000);
    expect(live.text()).toBe('w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 ');
    expect(live.frames.map((f) => f.type).slice(-2)).toEqual(['generated', 'end']);
    // each piece starts where the last ended
    let at = 0;
    for (const f of live.frames.filter((f) => f.type === 'text')) {
      expect(f.at).toBe(at);
      at += f.text!.length;
    }
    // a client that had the first piece asks after its id and reads the rest, nothing twice
    const first = live.frames.find((f) => f.type === 'text')!;
    const rest = read(served.server.url, id, first.id);
    expect(await rest.closed).toBe(1000);
    expect(first.text! + rest.text()).toBe(live.text());
  });

  it('refuses a wrong key, an unknown run and a bad after, naming them', async () => {
    const id = await start();
    const ws = (path: string) => `${served.server.url}${path}`;
    expect((await refusal(ws(`/runs/${id}/ws?token=wrong`))).status).toBe(401);
    const missing = await refusal(ws(`/runs/run_nope/ws?token=${TOKEN}`));
    expect(missing.status).toBe(404);
    expect(missing.body).toContain('run_nope');
    const bad = await refusal(ws(`/runs/${id}/ws?after=-1&token=${TOKEN}`));
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('after');
  });
});
