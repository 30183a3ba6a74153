import { describe, expect, it } from 'vitest';
import { RUN_EVENT } from '../events.js';
import { journaledText } from './generate.js';
import { TextBatches } from './text-batches.js';

describe('TextBatches', () => {
  it('writes one batch at a time, each from where the last ended, and drains what is left', async () => {
    const writes: Array<{ at: number; text: string }> = [];
    let release: (() => void) | null = null;
    const batches = new TextBatches(7, (at, text) => {
      writes.push({ at, text });
      return new Promise<void>((resolve) => (release = resolve));
    });
    batches.add('a'.repeat(600));
    // a batch past 512 characters goes at once; what arrives while it is written waits for it
    expect(writes).toEqual([{ at: 7, text: 'a'.repeat(600) }]);
    batches.add('bc');
    batches.add('d');
    expect(writes).toHaveLength(1);
    const drained = batches.drain();
    release!();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(writes[1]).toEqual({ at: 607, text: 'bcd' });
    release!();
    await drained;
    expect(batches.written).toBe(603);
    expect(batches.all).toBe(`${'a'.repeat(600)}bcd`);
  });

  it('fails the drain when a write failed', async () => {
    const batches = new TextBatches(0, async () => {
      throw new Error('lease lost');
    });
    batches.add('x'.repeat(600));
    await expect(batches.drain()).rejects.toThrow('lease lost');
  });
});

describe('journaledText', () => {
  const text = (version: number, at: number, t: string) => ({
    streamId: 'run:r',
    version,
    type: RUN_EVENT.stepText,
    data: { seq: 1, name: 'a', attempt: 1, at, text: t },
    timestamp: 0,
    metadata: {},
  });
  it('joins the batches of every attempt by offset', () => {
    const events = [text(1, 0, 'Hello'), text(2, 5, ', wor'), text(3, 10, 'ld')];
    expect(journaledText(events as never)).toBe('Hello, world');
  });
});
