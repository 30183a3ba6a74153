import { describe, expect, it } from 'vitest';
import { ReplayCache } from './cache.js';
import { History } from './history.js';

const history = (version: number) => {
  const h = new History([]);
  h.version = version;
  return h;
};

describe('ReplayCache', () => {
  it('gives a run back once, only for the generation it was cached at', () => {
    const cache = new ReplayCache({ maxRuns: 10, maxEvents: 1000 });
    const h = history(5);
    cache.put('r', 1, h, 5);
    expect(cache.take('r', 1)).toBe(h);
    // it left the cache while its pass runs
    expect(cache.take('r', 1)).toBeUndefined();
    cache.put('r', 1, h, 5);
    // the run continued as new elsewhere: its generation starts at another version
    expect(cache.take('r', 42)).toBeUndefined();
    expect(cache.size).toBe(0);
    expect([cache.hits, cache.misses]).toEqual([1, 2]);
  });

  it('keeps at most maxRuns runs and maxEvents events, least recently used out first', () => {
    const cache = new ReplayCache({ maxRuns: 2, maxEvents: 100 });
    cache.put('a', 1, history(10), 10);
    cache.put('b', 1, history(10), 10);
    cache.put('c', 1, history(10), 10);
    expect(cache.take('a', 1)).toBeUndefined();
    expect(cache.take('b', 1)).toBeDefined();
    cache.put('d', 1, history(95), 95);
    expect(cache.size).toBe(1);
    expect(cache.take('c', 1)).toBeUndefined();
    cache.put('huge', 1, history(500), 500);
    expect(cache.take('huge', 1)).toBeUndefined();
    expect(new ReplayCache({ maxRuns: 0, maxEvents: 100 }).take('x', 1)).toBeUndefined();
  });
});
