import { describe, expect, it } from 'vitest';
import { ReplayCache } from './cache.js';
import { History } from './history.js';

const history = (version: number) => {
  const h = new History([]);
  h.version = version;
  return h;
};

describe('ReplayCache', () => {
  it('gives a run back once, with the version its generation starts at', () => {
    const cache = new ReplayCache({ maxRuns: 10, maxEvents: 1000 });
    const h = history(5);
    cache.put('r', 3, h, 5);
    expect(cache.take('r')).toEqual({ from: 3, history: h });
    // it left the cache while its pass runs
    expect(cache.take('r')).toBeUndefined();
    expect(cache.size).toBe(0);
    expect([cache.hits, cache.misses]).toEqual([1, 1]);
  });

  it('keeps at most maxRuns runs and maxEvents events, least recently used out first', () => {
    const cache = new ReplayCache({ maxRuns: 2, maxEvents: 100 });
    cache.put('a', 1, history(10), 10);
    cache.put('b', 1, history(10), 10);
    cache.put('c', 1, history(10), 10);
    expect(cache.take('a')).toBeUndefined();
    expect(cache.take('b')).toBeDefined();
    cache.put('d', 1, history(95), 95);
    expect(cache.size).toBe(1);
    expect(cache.take('c')).toBeUndefined();
    cache.put('huge', 1, history(500), 500);
    expect(cache.take('huge')).toBeUndefined();
    expect(new ReplayCache({ maxRuns: 0, maxEvents: 100 }).take('x')).toBeUndefined();
  });
});
