import { describe, expect, it } from 'vitest';
import { backends } from '../../testing/backends.js';
import { useServer } from '../test-server.js';

describe.each(backends)('rule and schedule previews on $name', (backend) => {
  const { call } = useServer(backend);

  it("tries a pattern on the newest events, writing nothing, and names a bad pattern's field", async () => {
    const rules = (await call('GET', '/rules')).body.rules;
    await call('POST', '/events', [
      { id: 'o1', source: 'shop', 'detail-type': 'order.placed', detail: { total: 40 } },
      { id: 'o2', source: 'shop', 'detail-type': 'order.placed', detail: { total: 400 } },
      { id: 'u1', source: 'auth', 'detail-type': 'user.created', detail: {} },
    ]);
    const big = { source: ['shop'], detail: { total: [{ numeric: ['>=', 100] }] } };
    const answer = await call('POST', '/rules/preview', { pattern: big });
    expect(answer.status).toBe(200);
    expect(answer.body.tried).toBe(3);
    expect(answer.body.matched.map((e: { id: string }) => e.id)).toEqual(['o2']);
    expect(answer.body.matched[0]).toMatchObject({ source: 'shop', 'detail-type': 'order.placed' });
    expect((await call('POST', '/rules/preview', { pattern: { source: ['shop'] }, events: 1 })).body.tried).toBe(1);
    expect((await call('GET', '/rules')).body.rules).toEqual(rules);

    const bad = await call('POST', '/rules/preview', { pattern: { detail: { total: [{ numeric: ['>', 'x'] }] } } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.problems[0].path).toBe('pattern.detail.total[0].numeric[1]');
    const many = await call('POST', '/rules/preview', { pattern: {}, events: 101 });
    expect(many.status).toBe(400);
    expect(many.body.error.message).toMatch(/events/);
  });

  it("lists a cron's next ten slots in its time zone, and names a bad cron or time zone", async () => {
    const answer = await call('POST', '/schedules/preview', { cron: '0 9 * * *', timezone: 'Europe/Berlin' });
    expect(answer.status).toBe(200);
    const next = answer.body.next as string[];
    expect(next).toHaveLength(10);
    for (const [i, slot] of next.entries()) {
      expect(
        new Date(slot).toLocaleString('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit' }),
      ).toBe('09:00');
      if (i > 0) expect(Date.parse(slot) - Date.parse(next[i - 1]!)).toBeGreaterThanOrEqual(23 * 3600_000);
    }
    expect(Date.parse(next[0]!)).toBeGreaterThan(Date.now());
    const cron = await call('POST', '/schedules/preview', { cron: '* * *' });
    expect(cron.status).toBe(400);
    expect(cron.body.error.problems[0].path).toBe('cron');
    const zone = await call('POST', '/schedules/preview', { cron: '* * * * *', timezone: 'Mars/Olympus' });
    expect(zone.body.error.problems[0].path).toBe('timezone');
  });
});
