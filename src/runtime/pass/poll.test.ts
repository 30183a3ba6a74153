import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../errors.js';
import { pollDelay, pollSchedule } from './poll.js';

describe('poll schedule', () => {
  it("defaults to the brief's: 500 ms first, then 1 s growing 1.5× up to 5 s, for 60 s", () => {
    const schedule = pollSchedule('layout', { until: () => true });
    expect(schedule).toEqual({ initialDelay: 500, interval: 1000, factor: 1.5, maxInterval: 5000, maxWait: 60_000 });
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => pollDelay(schedule, n))).toEqual([
      1000, 1500, 2250, 3375, 5000, 5000, 5000,
    ]);
  });

  it('takes durations as strings or ms and refuses a factor below 1 or a missing condition', () => {
    expect(pollSchedule('x', { until: () => true, interval: '2s', maxWait: '2m', initialDelay: 0 })).toMatchObject({
      interval: 2000,
      maxWait: 120_000,
      initialDelay: 0,
    });
    expect(() => pollSchedule('x', { until: () => true, factor: 0.5 })).toThrow(ValidationError);
    expect(() => pollSchedule('x', { until: () => true, factor: 0.5 })).toThrow('poll(x).factor');
    expect(() => pollSchedule('x', {} as never)).toThrow('poll(x).until');
  });
});
