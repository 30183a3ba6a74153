import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { serve } from './child.js';

describe('runledger trigger, out of the box (the README walkthrough)', () => {
  it('an event from the CLI matches the shipped rule and starts a session that completes with the lifecycle journal', async () => {
    const database = await backends[0]!.create();
    const server = await serve(database);
    const url = server.url;
    try {
      const printed = execFileSync(
        process.execPath,
        ['bin/runledger.js', 'trigger', '--source', 'manual-trigger', '--detail-type', 'execute-agent', '--url', url],
        { encoding: 'utf8' },
      );
      const eventId = /event (\S+) stored/.exec(printed)?.[1];
      expect(printed, printed).toMatch(new RegExp(`rule manual-agent \\(rule_\\w+\\) → session ${eventId} started`));
      const session = await eventually(async () => {
        const s = await (await fetch(`${url}/sessions/${eventId}`)).json();
        return s.status === 'success' || s.status === 'failed' ? s : undefined;
      }, 20_000);
      expect(session).toMatchObject({ session_id: eventId, agent: 'sample-agent', status: 'success' });
      const { events } = await (await fetch(`${url}/sessions/${eventId}/events`)).json();
      expect(events.map((e: { type: string }) => e.type)).toEqual([
        'SESSION_INITIATED',
        'AGENT_INVOCATION_STARTED',
        'AGENT_INVOCATION_SUCCEEDED',
        'AGENT_ENTRYPOINT_STARTED',
        'AGENT_BACKGROUND_TASK_STARTED',
        'AGENT_BACKGROUND_TASK_COMPLETED',
      ]);
      const again = execFileSync(
        process.execPath,
        [
          'bin/runledger.js',
          'trigger',
          '--source',
          'manual-trigger',
          '--detail-type',
          'execute-agent',
          '--id',
          eventId!,
          '--url',
          url,
        ],
        { encoding: 'utf8' },
      );
      expect(again).toMatch(/was stored before: nothing new started/);
      const runs = await (await fetch(`${url}/runs?workflow=runledger.session`)).json();
      expect(runs.runs).toHaveLength(1);
    } finally {
      server.proc.kill('SIGKILL');
    }
  });
});
