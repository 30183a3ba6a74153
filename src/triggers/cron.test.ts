import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { parseCron } from './schedules.js';

const message = (cron: string) => {
  try {
    parseCron(cron, 'UTC');
  } catch (error) {
    if (error instanceof ValidationError) return error.message;
    throw error;
  }
  return null;
};

describe('a cron expression refused', () => {
  it('states the accepted field counts once, and how many it got', () => {
    expect(message('* * *')).toBe(
      "cron: has 3 fields: a cron expression has 5 fields, or 6 with leading seconds ('*/2 * * * * *')",
    );
    expect(message('* * * * * * * *')).toMatch(/^cron: has 8 fields: /);
    expect(message('61 * * * *')).toBe(
      "cron: Invalid value for minute: 61 (a cron expression has 5 fields, or 6 with leading seconds ('*/2 * * * * *'))",
    );
    for (const cron of ['* * *', '61 * * * *']) expect(message(cron)).not.toMatch(/seven|five, six/);
    expect(message('*/5 * * * *')).toBeNull();
  });
});
