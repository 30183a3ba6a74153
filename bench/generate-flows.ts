// The workflow bench/generate.ts measures ctx.generate with: loaded by `runledger serve --workflows
// bench/generate-flows.ts` (the crash measurement) and by bench/generate-child.ts (the chunk overhead).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Model, ModelRequest } from '../dist/runtime/model.js';
import { workflow } from '../dist/runtime/workflow.js';

export interface TimedInput {
  /** Chunks of the whole answer. */
  chunks: number;
  /** One chunk every this many ms, on a fixed schedule (no drift). */
  intervalMs: number;
  /** The first chunk this long after `startAt` (spreads many runs' chunks over the interval). */
  phaseMs: number;
  /** Wall-clock ms (`wallNow()`) before which no chunk is yielded: many runs started one by one stream together. */
  startAt?: number;
}

/** A chunk: ` <index>@<wall-clock ms when the model yielded it>`, so a reader in another process can time it. */
const CHUNK = / (\d+)@(\d+\.\d+)/g;

/** The chunks in `text`: their index and when the model yielded them (performance.timeOrigin + now, in ms). */
export function chunksOf(text: string): Array<{ index: number; at: number }> {
  return [...text.matchAll(CHUNK)].map((m) => ({ index: Number(m[1]), at: Number(m[2]) }));
}

/** This process's wall clock with sub-millisecond resolution (comparable across processes of one machine). */
export const wallNow = () => performance.timeOrigin + performance.now();

/**
 * A model of the bench's own: no HTTP, no SDK, so what is timed is runledger's part (journaling the text, delivering
 * it). It continues a prefix (`continuation: 'prefix'`): an attempt after a crash counts the chunks the journal holds
 * and yields the next one at once, then keeps the schedule.
 */
function timedModel(input: TimedInput): Model {
  return {
    id: 'bench-timed',
    continuation: 'prefix',
    async *stream(request: ModelRequest) {
      const from = chunksOf(request.prefix).length;
      const now = performance.now();
      const start = from === 0 ? Math.max(now, (input.startAt ?? 0) - performance.timeOrigin) + input.phaseMs : now;
      for (let i = from; i < input.chunks; i++) {
        const wait = start + (i - from) * input.intervalMs - performance.now();
        if (wait > 0) await sleep(wait, undefined, { signal: request.signal });
        request.signal.throwIfAborted();
        yield { type: 'text' as const, text: ` ${i}@${wallNow().toFixed(3)}` };
      }
      yield { type: 'finish' as const, finishReason: 'stop', outputTokens: input.chunks };
    },
  };
}

export const timedGeneration = workflow('bench.generate', async (ctx, input: TimedInput) => {
  const answer = await ctx.generate('answer', {
    model: timedModel(input),
    messages: [{ role: 'user', content: 'count, slowly' }],
  });
  return answer.usage.outputTokens;
});
