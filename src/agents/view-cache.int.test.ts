import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConflictError } from '../errors.js';
import { backends } from '../testing/backends.js';
import { twoProcesses, type Process } from '../testing/processes.js';
import { conversationStream, readConversation } from './conversation.js';
import { projectLedger } from './ledger-projection.js';
import { projectSessions, readSession, sessionStream } from './view.js';

/**
 * The session and conversation views a process keeps between its transactions (`WrittenViews`): a
 * kept view is used only for the stream's next event, and only once its transaction committed. Two
 * journals on one database stand for two processes.
 */
describe.each(backends)('kept session and conversation views on $name', (backend) => {
  let here: Process;
  let there: Process;
  beforeEach(async () => {
    [here, there] = await twoProcesses(backend, (journal) => {
      projectSessions(journal);
      projectLedger(journal);
    });
  });
  afterEach(async () => {
    for (const p of [here, there]) await p.store.close();
  });

  const record = (p: Process, type: string) => p.journal.append(sessionStream('s1'), [{ type, data: { agent: 'a' } }]);

  it("reads the view again after another process's event, and keeps nothing of a rollback", async () => {
    await record(here, 'SESSION_INITIATED');
    await record(there, 'AGENT_INVOCATION_STARTED');
    // kept here at version 1, the session is at 2: a kept view would refuse this as following SESSION_INITIATED
    await record(here, 'AGENT_INVOCATION_SUCCEEDED');
    expect(await readSession(here.store, 's1')).toMatchObject({
      status: 'running',
      events_count: 3,
      last_event: 'AGENT_INVOCATION_SUCCEEDED',
    });
    await expect(
      here.store.transaction(async (tx) => {
        await here.journal.append(sessionStream('s1'), [{ type: 'AGENT_ENTRYPOINT_STARTED', data: {} }], { tx });
        throw new Error('after the append');
      }),
    ).rejects.toThrow('after the append');
    // version 4 is another process's now: a view kept of the rolled-back append (ENTRYPOINT_STARTED at 4) would let this follow it
    await record(there, 'SESSION_FAILED');
    await expect(record(here, 'AGENT_ENTRYPOINT_FAILED')).rejects.toThrow(ConflictError);
    expect(await readSession(here.store, 's1')).toMatchObject({
      status: 'failed',
      events_count: 4,
      last_event: 'SESSION_FAILED',
    });
  });

  it('checks each lifecycle event of one append in order and writes the view of the last; a refused one refuses them all', async () => {
    const opening = ['AGENT_INVOCATION_STARTED', 'AGENT_INVOCATION_SUCCEEDED', 'AGENT_ENTRYPOINT_STARTED'];
    await here.journal.append(sessionStream('s1'), [
      { type: 'SESSION_INITIATED', data: { agent: 'a' } },
      ...opening.map((type) => ({ type, data: {} })),
    ]);
    expect(await readSession(there.store, 's1')).toMatchObject({
      agent: 'a',
      status: 'running',
      events_count: 4,
      last_event: 'AGENT_ENTRYPOINT_STARTED',
    });
    // the background cannot start twice: the second event refuses the append, the first is not written either
    await expect(
      there.journal.append(sessionStream('s1'), [
        { type: 'AGENT_BACKGROUND_TASK_STARTED', data: {} },
        { type: 'AGENT_BACKGROUND_TASK_STARTED', data: {} },
      ]),
    ).rejects.toThrow(ConflictError);
    expect(await readSession(here.store, 's1')).toMatchObject({
      events_count: 4,
      last_event: 'AGENT_ENTRYPOINT_STARTED',
    });
    expect(await here.journal.readStream(sessionStream('s1'))).toHaveLength(4);
  });

  it("reads a conversation's view again after another process's event", async () => {
    const arrive = (p: Process, type: string, run_id: string, agent: string) =>
      p.journal.append(conversationStream('c1'), [{ type, data: { run_id, agent } }]);
    await arrive(here, 'agent.event.queued', 'r1', 'a');
    await arrive(there, 'agent.run.ended', 'r1', 'a');
    // kept here at version 1 (r1 waiting): a kept view would still list it
    await arrive(here, 'agent.event.queued', 'r2', 'b');
    expect(await readConversation(here.store, 'c1')).toEqual({ version: 3, waiting: { b: 'r2' } });
    await here.store.transaction(async (tx) => {
      await here.journal.append(
        conversationStream('c1'),
        [{ type: 'agent.event.queued', data: { run_id: 'r3', agent: 'c' } }],
        { tx },
      );
      await here.journal.append(
        conversationStream('c1'),
        [{ type: 'agent.run.ended', data: { run_id: 'r2', agent: 'b' } }],
        { tx },
      );
    });
    await arrive(here, 'agent.event.coalesced', 'r3', 'c');
    expect(await readConversation(there.store, 'c1')).toEqual({ version: 6, waiting: { c: 'r3' } });
  });
});
