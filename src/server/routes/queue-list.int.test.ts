import { describe, expect, it } from 'vitest';
import { backends } from '../../testing/backends.js';
import { useServer } from '../test-server.js';

describe.each(backends)('GET /queues on $name', (backend) => {
  const { call } = useServer(backend);
  const who = { by: 'ops', reason: 'maintenance' };

  it('lists each queue with its tasks by state and whether it is paused, a paused empty queue too', async () => {
    expect((await call('GET', '/queues')).body).toEqual({ queues: [] });
    await call('POST', '/queues/mail/tasks', { tasks: [{ payload: 1 }, { payload: 2 }] });
    await call('POST', '/queues/sms/tasks', { payload: 3, delay: '1h' });
    expect((await call('POST', '/operator/pause', { kind: 'queue', name: 'mail', ...who })).body).toEqual({
      paused: true,
    });
    await call('POST', '/operator/pause', { kind: 'queue', name: 'empty', ...who });
    expect((await call('GET', '/queues')).body.queues).toEqual([
      { queue: 'empty', ready: 0, due: 0, running: 0, dead: 0, paused: true },
      { queue: 'mail', ready: 2, due: 2, running: 0, dead: 0, paused: true },
      { queue: 'sms', ready: 1, due: 0, running: 0, dead: 0, paused: false },
    ]);
    await call('POST', '/operator/resume', { kind: 'queue', name: 'mail', ...who });
    const after = (await call('GET', '/queues')).body.queues;
    expect(after.find((q: { queue: string }) => q.queue === 'mail').paused).toBe(false);
  });
});
