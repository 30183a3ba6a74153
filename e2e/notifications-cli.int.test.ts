import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createSqlitePath } from '../src/testing/databases.js';
import { cli, serve } from './child.js';

describe('runledger notifications create / list / test / deliveries / delete (issue 44)', () => {
  it('creates a notification, sends a test event the receiver refuses once then takes, and lists both', async () => {
    const answers = [500];
    const received: string[] = [];
    const hook = createServer((req, res) => {
      received.push(String(req.headers['runledger-delivery']));
      req.resume();
      req.on('end', () => res.writeHead(answers.shift() ?? 200).end('ok'));
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    const server = await serve(createSqlitePath(), [], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1', RUNLEDGER_POLL_MS: '100' });
    const run = async (...args: string[]) => {
      const c = cli([...args, '--url', server.url]);
      return { exit: (await c.exited).code, output: c.output() };
    };
    try {
      const bad = await run('notifications', 'create', 'ops', url, '--event', 'run.failed', 'run.exploded');
      expect(bad.exit).toBe(1);
      expect(bad.output).toContain('events[1]: unknown event type "run.exploded"');

      const created = await run('notifications', 'create', 'ops', url, '--event', 'run.failed', 'task.dead');
      expect(created.exit, created.output).toBe(0);
      const id = /created (ntf_\S+) \(ops\)/.exec(created.output)?.[1];
      expect(id, created.output).toBeDefined();
      expect(created.output).toMatch(/secret: [0-9a-f]{64} {2}\(shown once/);

      const list = await run('notifications', 'list');
      expect(list.output).toMatch(
        new RegExp(`${id}\\s+ops\\s+run\\.failed,task\\.dead\\s+http://127\\.0\\.0\\.1:\\d+/hook\\s+yes`),
      );

      const refused = await run('notifications', 'test', id!);
      expect(refused.exit).toBe(1);
      expect(refused.output).toMatch(/: dead \(500: .*500/);
      const taken = await run('notifications', 'test', id!);
      expect(taken.exit, taken.output).toBe(0);
      expect(taken.output).toMatch(/^dlv_\S+: delivered \(200\)/);

      const deliveries = await run('notifications', 'deliveries', id!);
      expect(deliveries.output).toMatch(/dlv_\S+ {2}notification\.test {2}delivered .*\n {2}#1 \S+ {2}200 {2}\d+ ms\n/);
      expect(deliveries.output).toMatch(
        /dlv_\S+ {2}notification\.test {2}dead .*\n {2}#1 \S+ {2}500 {2}\d+ ms {2}.*500/,
      );
      expect(received).toHaveLength(2);

      expect((await run('notifications', 'delete', id!)).output).toContain(`deleted ${id}`);
      expect((await run('notifications', 'list')).output).toContain('no notifications');
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
      await new Promise((resolve) => hook.close(resolve));
    }
  });
});
