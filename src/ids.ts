import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
let lastTime = -1;
let lastRandom = new Uint8Array(10);

/**
 * A ULID with a type prefix (`task_01JD…`): 48 bits of milliseconds, then 80 random bits,
 * monotonic within a millisecond in this process, so ids sort by creation time.
 *
 * @example newId('task') // 'task_01JDQ3Z8X4N7V6K2M9P0R5S1T3'
 */
export function newId(prefix: string, now = Date.now()): string {
  if (now <= lastTime) {
    increment(lastRandom);
  } else {
    lastTime = now;
    lastRandom = new Uint8Array(randomBytes(10));
  }
  return `${prefix}_${encodeTime(lastTime)}${encodeRandom(lastRandom)}`;
}

function increment(bytes: Uint8Array): void {
  for (let i = bytes.length - 1; i >= 0; i--) {
    const next = (bytes[i] ?? 0) + 1;
    bytes[i] = next & 0xff;
    if (next <= 0xff) return;
  }
}

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

function encodeRandom(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}
