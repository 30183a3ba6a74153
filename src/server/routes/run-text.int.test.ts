import { describe, expect, it } from 'vitest';
import { offlineModel } from '../../models/offline.js';
import { workflow } from '../../runtime/workflow.js';
import { sseReader, type SseMessage } from '../../sse-read.js';
import { backends } from '../../testing/backends.js';
import { useServer } from '../test-server.js';

const echo = workflow('echo-generate', async (ctx, input: { q: string }) => {
  const { text } = await ctx.generate('echo', {
    model: offlineModel(),
    messages: [{ role: 'user', content: input.q }],
  });
  return text;
});

/** Every message of the run's text stream from `lastEventId` (all without), until the stream closes. */
async function messages(url: string, runId: string, lastEventId?: string): Promise<SseMessage[]> {
  const response = await fetch(`${url}/runs/${runId}/stream`, {
    headers: lastEventId ? { 'last-event-id': lastEventId } : {},
  });
  expect(response.status).toBe(200);
  const parse = sseReader();
  const got: SseMessage[] = [];
  for await (const chunk of response.body!.pipeThrough(new TextDecoderStream())) got.push(...parse(chunk));
  return got;
}

describe.each(backends)('GET /runs/{id}/stream on $name', (backend) => {
  const served = useServer(backend, { workers: true, pollMs: 100, codeWorkflows: [echo] });

  it("streams a run's generated text, then generated and end; Last-Event-ID resumes after a message", async () => {
    const started = await served.call('POST', '/runs', { workflow: 'echo-generate', id: 'echo-1', input: { q: 'hi' } });
    expect(started.status).toBe(202);
    const all = await messages(served.server.url, 'echo-1');
    const texts = all.filter((m) => m.event === 'text').map((m) => JSON.parse(m.data));
    const reply = 'You said: "hi" (offline model; 1 messages of context)';
    expect(texts.map((t) => t.text).join('')).toBe(reply);
    expect(texts[0]).toMatchObject({ step: 'echo', seq: 1, at: 0 });
    expect(all.map((m) => m.event).slice(-2)).toEqual(['generated', 'end']);
    expect(JSON.parse(all.at(-2)!.data)).toMatchObject({
      step: 'echo',
      finishReason: 'stop',
      usage: { model: 'offline' },
    });
    // from the first message on, the rest and nothing before it
    const rest = await messages(served.server.url, 'echo-1', all[0]!.id);
    expect(rest.map((m) => m.id)).toEqual(all.slice(1).map((m) => m.id));
  });

  it('answers 404 for an unknown run and 400 for a Last-Event-ID that is not a version', async () => {
    expect((await served.call('GET', '/runs/nope/stream')).status).toBe(404);
    await served.call('POST', '/runs', { workflow: 'echo-generate', id: 'echo-2', input: { q: 'x' } });
    const bad = await fetch(`${served.server.url}/runs/echo-2/stream`, { headers: { 'last-event-id': 'abc' } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain('Last-Event-ID');
  });
});
