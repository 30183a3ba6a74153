import { describe, expect, it } from 'vitest';
import type { StoredEvent } from './store.js';
import { appendWakeups, parseWakeups } from './wakeups.js';

const event = (streamId: string, version: number): StoredEvent => ({
  position: version,
  streamId,
  version,
  type: 'x',
  data: null,
  metadata: {},
  timestamp: 0,
});

describe('wake-ups of an append', () => {
  it('name each stream with the version it reached, several streams to a payload', () => {
    const events = [event('run:a', 3), event('run:a', 4), event('run:b', 1), event('task:t1', 2)];
    const payloads = appendWakeups({ appends: [] }, { events, duplicate: false });
    expect(payloads).toHaveLength(1);
    expect(payloads.flatMap(parseWakeups)).toEqual([
      { stream: 'run:a', version: 4 },
      { stream: 'run:b', version: 1 },
      { stream: 'task:t1', version: 2 },
    ]);
  });

  it('split streams over payloads PostgreSQL can carry, and wake everyone with one empty payload past 512 streams', () => {
    const names = Array.from({ length: 500 }, (_, i) => `run:${'é'.repeat(40)}-${i}`);
    const payloads = appendWakeups({ appends: [] }, { events: names.map((n) => event(n, 1)), duplicate: false });
    expect(payloads.length).toBeGreaterThan(1);
    for (const payload of payloads) expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(7000);
    expect(payloads.flatMap(parseWakeups).map((w) => w.stream)).toEqual(names);
    const many = appendWakeups(
      { appends: [] },
      { events: Array.from({ length: 513 }, (_, i) => event(`s${i}`, 1)), duplicate: false },
    );
    expect(many).toEqual(['']);
    expect(parseWakeups('')).toEqual([{ stream: '', version: undefined }]);
  });

  it('name the streams of an idempotent repeat, which wrote no event, without versions', () => {
    const payloads = appendWakeups({ appends: [{ streamId: 'run:a', events: [] }] }, { events: [], duplicate: true });
    expect(payloads.flatMap(parseWakeups)).toEqual([{ stream: 'run:a', version: undefined }]);
  });
});
