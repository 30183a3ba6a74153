import { describe, expect, it } from 'vitest';
import { backends } from '../testing/backends.js';
import { eventually } from '../testing/engine.js';
import { useServer } from './test-server.js';

const who = { by: 'ops', reason: 'upstream is down' };
const log = [{ id: 'note', type: 'log', config: { message: 'hi' } }];
const waitThenLog = [
  { id: 'wait', type: 'wait_for_event', config: { event: 'go', match: 'data.n == {{trigger.n}}', timeout: '10m' } },
  ...log,
];

// issue 47: every stored workflow runs as the one code workflow runledger.stored; a pause of one holds it alone
describe.each(backends)('pausing one stored workflow on $name', (backend) => {
  const { call } = useServer(backend, { workers: true, pollMs: 50 });
  let n = 0;
  const create = async (steps: unknown[]) =>
    (await call('POST', '/workflows', { name: `wf-${++n}`, steps })).body as { id: string; name: string };
  const execute = async (id: string, trigger: Record<string, unknown> = {}) =>
    (await call('POST', `/workflows/${id}/execute`, { trigger_data: trigger })).body.execution_id as string;
  const status = async (id: string, eid: string) =>
    (await call('GET', `/workflows/${id}/executions/${eid}`)).body.status as string;
  const done = (id: string, eid: string) =>
    eventually(async () => ((await status(id, eid)) === 'success' ? true : undefined), 20_000);
  /** The passes waiting in the run queue: a held pass stays here. */
  const ready = async () =>
    ((await call('GET', '/queues')).body.queues as Array<{ queue: string; ready: number }>).find(
      (q) => q.queue === 'runledger.runs',
    )?.ready ?? 0;

  it('holds only its executions: the other completes, it waits queued until resumed; the listing names it alone', async () => {
    const [a, b] = [await create(log), await create(log)];
    expect((await call('POST', `/workflows/${a.name}/pause`, who)).body).toEqual({ workflow_id: a.id, paused: true });
    const heldA = await execute(a.id);
    const freeB = await execute(b.id);
    await done(b.id, freeB);
    // the worker claimed B's pass after A's was queued: A's stays, refused by the claim
    expect(await status(a.id, heldA)).toBe('pending');
    expect(await ready()).toBe(1);
    const pauses = (await call('GET', '/operator/pauses')).body.pauses;
    expect(pauses).toEqual([expect.objectContaining({ kind: 'workflow', name: a.id, stored_workflow: a.name })]);
    expect((await call('POST', `/workflows/${a.id}/resume`, who)).body).toEqual({ workflow_id: a.id, resumed: true });
    await done(a.id, heldA);
    expect((await call('GET', '/operator/pauses')).body.pauses).toEqual([]);
  });

  it('holds a running execution at its next step: the pass its wake-up queues waits for the resume', async () => {
    const [a, b] = [await create(waitThenLog), await create(log)];
    const running = await execute(a.id, { n: 1 });
    await eventually(async () =>
      (await call('GET', `/runs/${running}`)).body.status === 'waiting' ? true : undefined,
    );
    await call('POST', `/workflows/${a.id}/pause`, who);
    await call('POST', '/events', { source: 'test', 'detail-type': 'go', detail: { n: 1 } });
    // the event woke the run: its next pass is queued, held by the pause
    await eventually(async () => ((await ready()) === 1 ? true : undefined));
    await done(b.id, await execute(b.id));
    expect(await ready()).toBe(1);
    expect(await status(a.id, running)).not.toBe('success');
    await call('POST', `/workflows/${a.id}/resume`, who);
    await done(a.id, running);
  });

  it('answers a pause of a stored workflow that does not exist with 404, and one without a reason with 400', async () => {
    expect((await call('POST', '/workflows/no-such-workflow/pause', who)).status).toBe(404);
    const a = await create(log);
    expect((await call('POST', `/workflows/${a.id}/pause`, { by: 'ops' })).status).toBe(400);
  });
});
