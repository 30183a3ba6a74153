import { afterEach, describe, expect, it, vi } from 'vitest';
import { KeptViews } from './kept.js';

describe('KeptViews', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('lets go of views once they can no longer be taken, also when nothing is kept after them', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const kept = new KeptViews<{ n: number }>();
    for (let i = 0; i < 10; i++) kept.keep(`run:${i}`, 1, { n: i });
    vi.advanceTimersByTime(20_000);
    kept.keep('run:late', 3, { n: 99 });
    expect(kept.peek('run:1', 1)).toEqual({ n: 1 });
    expect(kept.size).toBe(11);
    vi.advanceTimersByTime(10_000);
    // the first ten are 30 s old: no take could have them, so nothing holds them
    expect(kept.peek('run:1', 1)).toBeUndefined();
    expect(kept.size).toBe(1);
    expect(kept.take('run:late', 3)).toEqual({ n: 99 });
    kept.keep('run:late', 4, { n: 100 });
    vi.advanceTimersByTime(29_999);
    expect(kept.size).toBe(1);
    vi.advanceTimersByTime(1);
    expect(kept.size).toBe(0);
  });

  it('keeps the 1,000 most recently kept views', () => {
    const kept = new KeptViews<number>();
    for (let i = 0; i < 1_005; i++) kept.keep(`run:${i}`, i, i);
    expect(kept.size).toBe(1_000);
    expect(kept.peek('run:4', 4)).toBeUndefined();
    expect(kept.peek('run:5', 5)).toBe(5);
    expect(kept.take('run:1004', 1004)).toBe(1004);
    expect(kept.take('run:1004', 1004)).toBeUndefined();
  });
});
