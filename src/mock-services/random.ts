/**
 * A seeded generator (mulberry32): the same seed and the same sequence of requests give the same
 * ids, delays and layouts, so a failing test can be replayed. Only requests draw from the shared
 * sequence; work that ends later draws from `fork(its id)`, so the order timers fire in changes nothing.
 */
export interface Random {
  readonly seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** `prefix-` and 8 hex digits, e.g. `sess-3f9a0c12`. */
  id(prefix: string): string;
  /** `ms` varied by ±`spread` (0.2 → ±20 %). */
  vary(ms: number, spread?: number): number;
  /** A generator of its own for `key`, from this seed and the key alone. */
  fork(key: string): Random;
}

export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    seed,
    next,
    id: (prefix) =>
      `${prefix}-${Math.floor(next() * 0x100000000)
        .toString(16)
        .padStart(8, '0')}`,
    vary: (ms, spread = 0.2) => ms * (1 - spread + 2 * spread * next()),
    fork: (key) => createRandom((seed ^ hash(key)) >>> 0),
  };
}

/** FNV-1a of a string, 32 bits. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
