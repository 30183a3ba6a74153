import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { serve, type Served } from './child.js';

/** `runledger serve`; `dataDir` (its key file) outlives a restart. */
const serveHere = (database: string, dataDir: string) =>
  serve(database, [], {
    RUNLEDGER_HTTP_ALLOW: '127.0.0.1',
    RUNLEDGER_DATA_DIR: dataDir,
    RUNLEDGER_LEASE_MS: '1500',
    RUNLEDGER_POLL_MS: '100',
  });

interface Frame {
  id: string;
  event: string;
  data: { version: number; type: string; data?: { name?: string } };
}

/** Event frames of an SSE body as they arrive; comments (heartbeats) are skipped. */
async function* frames(body: ReadableStream<Uint8Array>): AsyncGenerator<Frame> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const fields = new Map(
        buffer
          .slice(0, end)
          .split('\n')
          .filter((l) => !l.startsWith(':'))
          .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)] as const),
      );
      buffer = buffer.slice(end + 2);
      const event = fields.get('event');
      if (event) yield { id: fields.get('id') ?? '', event, data: JSON.parse(fields.get('data') ?? 'null') };
    }
  }
}

const transform = (id: string) => ({
  id,
  type: 'transform',
  config: { template: `{{trigger.word}} ${id}`, output_key: 'text' },
});

describe.each(backends)('SSE across a server restart on $name', (backend) => {
  let target: Server;
  let held: Array<() => void> = [];
  let holding = true;
  let targetUrl: string;
  const servers: Served[] = [];

  beforeEach(async () => {
    holding = true;
    held = [];
    // answers /hold only once released: the execution is mid-flight while the server is killed
    target = createServer((req, res) => {
      const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      if (holding) held.push(answer);
      else answer();
      req.resume();
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  });
  afterEach(() => {
    for (const s of servers.splice(0)) s.proc.kill('SIGKILL');
    target.closeAllConnections();
    target.close();
  });

  it('resumes the run stream with Last-Event-ID after a SIGKILL: the union is exactly the journal', async () => {
    const database = await backend.create();
    const dataDir = mkdtempSync(join(tmpdir(), 'runledger-sse-'));
    const first = await serveHere(database, dataDir);
    servers.push(first);
    const post = async (url: string, body: unknown) => {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status, await res.clone().text()).toBeLessThan(300);
      return (await res.json()) as Record<string, string>;
    };
    const wf = await post(`${first.url}/workflows`, {
      name: 'sse-restart',
      steps: [
        transform('t1'),
        transform('t2'),
        transform('t3'),
        { id: 'hold', type: 'http_request', config: { url: `${targetUrl}/hold` } },
        transform('t4'),
        transform('t5'),
      ],
    });
    const { execution_id } = await post(`${first.url}/workflows/${wf.id}/execute`, { trigger_data: { word: 'hi' } });

    const seen: Frame[] = [];
    const before = await fetch(`${first.url}/runs/${execution_id}/events/stream`);
    expect(before.headers.get('content-type')).toMatch(/^text\/event-stream/);
    for await (const frame of frames(before.body!)) {
      seen.push(frame);
      if (frame.event === 'step.started' && frame.data.data?.name === 'hold') break;
    }
    const partway = seen.length;
    first.proc.kill('SIGKILL');
    await first.exited;

    const second = await serveHere(database, dataDir);
    servers.push(second);
    holding = false;
    for (const answer of held.splice(0)) answer();
    const after = await fetch(`${second.url}/runs/${execution_id}/events/stream`, {
      headers: { 'Last-Event-ID': seen.at(-1)!.id },
    });
    expect(after.status).toBe(200);
    for await (const frame of frames(after.body!)) seen.push(frame);

    const res = await fetch(`${second.url}/workflows/${wf.id}/executions/${execution_id}/events?limit=1000`);
    const journal = ((await res.json()) as { events: Array<{ version: number; type: string }> }).events;
    expect(partway).toBeLessThan(journal.length);
    expect(journal.at(-1)!.type).toBe('run.completed');
    expect(seen.map((f) => ({ version: Number(f.id), type: f.event }))).toEqual(
      journal.map((e) => ({ version: e.version, type: e.type })),
    );
    expect(seen.map((f) => f.data.version)).toEqual(journal.map((_, i) => i + 1));
  }, 60_000);
});
