import { expect } from 'vitest';
import { type SseMessage, sseReader } from '../src/sse-read.js';
import { eventually } from '../src/testing/engine.js';
import type { Served } from './child.js';

interface Text {
  step: string;
  at: number;
  text: string;
}

/**
 * A client reading `GET /runs/{id}/stream` from `after` until the run's `end` or the connection breaks: what it got,
 * in order (the last message's id is its Last-Event-ID).
 */
export function readRunStream(url: string, runId: string, after: string | null) {
  const got: SseMessage[] = [];
  const done = (async () => {
    const response = await fetch(`${url}/runs/${runId}/stream`, {
      headers: after === null ? {} : { 'last-event-id': after },
    });
    expect(response.status).toBe(200);
    const parse = sseReader();
    try {
      for await (const chunk of response.body!.pipeThrough(new TextDecoderStream()))
        for (const m of parse(chunk)) got.push(m);
    } catch {
      // the server was killed mid-stream: the client keeps what it read
    }
  })();
  return { got, done, texts: () => got.filter((m) => m.event === 'text').map((m) => JSON.parse(m.data) as Text) };
}

/**
 * The crash at the heart of the generate e2e tests: a client reads run `runId`'s text from `first` until a third of
 * `full` has come, `first` is killed with SIGKILL, `restart` starts the next server, and the client reconnects with
 * its Last-Event-ID and reads to the run's end. Checks the client's text has no gap and no repeat and is `full`, with
 * one seam (`resumed`) at or past what the client had; returns the seam's message.
 */
export async function killMidAnswer(
  first: Served,
  runId: string,
  full: string,
  restart: () => Promise<Served>,
): Promise<{ second: Served; seam: { at: number; step: string; mode: string } }> {
  const before = readRunStream(first.url, runId, null);
  // mid-answer: the client has some text, the model has more to send
  await eventually(() => before.texts().reduce((n, t) => n + t.text.length, 0) > full.length / 3, 20_000);
  first.proc.kill('SIGKILL');
  await first.exited;
  await before.done;
  const had = before.texts();
  expect(had.length).toBeGreaterThan(0);

  const second = await restart();
  const after = readRunStream(second.url, runId, before.got.at(-1)!.id);
  await after.done;
  expect(after.got.at(-1)?.event).toBe('end');
  // no gap, no repeat: each piece starts where the one before ended, and together they are the answer
  const pieces = [...had, ...after.texts()];
  let at = 0;
  for (const p of pieces) {
    expect(p.at).toBe(at);
    at += p.text.length;
  }
  expect(pieces.map((p) => p.text).join('')).toBe(full);
  const resumed = after.got.filter((m) => m.event === 'resumed').map((m) => JSON.parse(m.data));
  expect(resumed).toHaveLength(1);
  expect(resumed[0].at).toBeGreaterThanOrEqual(had.reduce((n, t) => n + t.text.length, 0));
  return { second, seam: resumed[0] };
}
