import { describe, expect, it } from 'vitest';
import { backends } from '../../testing/backends.js';
import { useServer } from '../test-server.js';

describe.each(backends)('POST /schedules/{id}/backfill on $name', (backend) => {
  const { call } = useServer(backend);

  it('starts one run per past slot, once however often it is asked, and names a bad window', async () => {
    const steps = [{ id: 'a', type: 'log', config: { message: 'slot {{trigger.slot}}' } }];
    const wf = (await call('POST', '/workflows', { name: 'report', steps })).body;
    expect(wf.id).toMatch(/^wf_/);
    const schedule = (await call('POST', '/schedules', { cron: '0 * * * *', target: { workflow: wf.id } })).body;
    const window = { from: '2026-01-01T00:00:00Z', to: '2026-01-01T03:00:00Z' };
    const first = await call('POST', `/schedules/${schedule.id}/backfill`, window);
    expect(first.status).toBe(200);
    expect(first.body.runs.map((r: { slot: string }) => r.slot)).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T01:00:00.000Z',
      '2026-01-01T02:00:00.000Z',
    ]);
    expect(new Set(first.body.runs.map((r: { run_id: string }) => r.run_id)).size).toBe(3);
    const run = (await call('GET', `/runs/${first.body.runs[0].run_id}`)).body;
    expect(JSON.stringify(run)).toContain('"backfill":true');
    // a wider window: the three slots keep their runs, one new slot gets one
    const again = await call('POST', `/schedules/${schedule.id}/backfill`, { ...window, to: '2026-01-01T04:00:00Z' });
    expect(again.body.runs.slice(0, 3)).toEqual(first.body.runs);
    expect(again.body.runs).toHaveLength(4);

    const future = await call('POST', `/schedules/${schedule.id}/backfill`, { ...window, to: '2999-01-01T00:00:00Z' });
    expect(future.status).toBe(400);
    expect(future.body.error.problems[0].path).toBe('to');
    const wide = await call('POST', `/schedules/${schedule.id}/backfill`, { ...window, to: '2026-01-10T00:00:00Z' });
    expect(wide.status).toBe(400);
    expect(wide.body.error.message).toMatch(/100 slots/);
    const backwards = await call('POST', `/schedules/${schedule.id}/backfill`, { from: window.to, to: window.from });
    expect(backwards.body.error.problems[0].path).toBe('from');
    expect((await call('POST', '/schedules/sch_nope/backfill', window)).status).toBe(404);
  });
});
