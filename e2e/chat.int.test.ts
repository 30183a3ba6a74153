import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Channels } from '../src/chat/channels.js';
import { createEngine } from '../src/engine.js';
import { backends, type Backend } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { watch } from '../src/testing/socket.js';
import { cli, node, serve, type Served } from './child.js';

/** The reply worker script `e2e/reply-child.ts` as a real process. */
const replyWorker = (database: string, log: string, crash?: 'crash') =>
  node(['--import', 'tsx', 'e2e/reply-child.ts', database, log, ...(crash ? [crash] : [])]);

describe.each(backends)('chat AI replies on $name', (backend: Backend) => {
  it('stores exactly one reply when the worker is killed between the model call and the write', async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'rl-reply-')), 'calls.log');
    writeFileSync(log, '');
    const engine = await createEngine({ database, workers: false });
    const channels = new Channels(engine.store, engine.journal);
    try {
      await channels.post('help', { event_id: 'q-1', sender_id: 'u1', role: 'user', content: 'is it down?' });
      const doomed = replyWorker(database, log, 'crash');
      expect((await doomed.exited).signal, doomed.output()).toBe('SIGKILL');
      expect(readFileSync(log, 'utf8').trim().split('\n')).toHaveLength(1);
      expect((await channels.history('help')).messages).toHaveLength(1);

      const survivor = replyWorker(database, log);
      await eventually(async () => (await channels.history('help')).messages.length === 2, 20_000);
      await channels.post('help', { event_id: 'q-2', sender_id: 'u1', role: 'user', content: 'and now?' });
      await eventually(async () => (await channels.history('help')).messages.length === 4, 20_000);
      survivor.proc.kill('SIGTERM');
      await survivor.exited;
      const messages = (await channels.history('help')).messages;
      expect(messages.map((m) => [m.role, m.event_id])).toEqual([
        ['user', 'q-1'],
        ['ai', 'reply:q-1'],
        ['user', 'q-2'],
        ['ai', 'reply:q-2'],
      ]);
      // the lost answer is the reply run's recorded one: the model is not asked again
      expect(readFileSync(log, 'utf8').trim().split('\n')).toHaveLength(2);
    } finally {
      await engine.close();
    }
  });
});

describe('chat across server processes on PostgreSQL', () => {
  const servers: Served[] = [];
  afterEach(
    () =>
      void servers.splice(0).forEach((s) => {
        s.proc.kill('SIGKILL');
      }),
  );

  it('a socket on server A receives a message posted to server B', async () => {
    const database = await backends[1]!.create();
    servers.push(...(await Promise.all([serve(database), serve(database)])));
    const [a, b] = servers.map((s) => s.url) as [string, string];
    const onA = watch(a, 'lobby');
    await onA.open;
    const posted = await fetch(`${b}/channels/lobby/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sender_id: 'u1', role: 'system', content: 'hello from B' }),
    });
    expect(posted.status).toBe(201);
    await eventually(() => onA.messages.length === 1);
    expect(onA.messages[0]).toMatchObject({ seq: 1, content: 'hello from B' });
    const asked = await fetch(`${b}/channels/lobby/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sender_id: 'u1', role: 'user', content: 'anyone?' }),
    });
    expect(asked.status).toBe(201);
    // one AI reply, from whichever server's worker holds the subscription
    await eventually(() => onA.messages.length === 3, 20_000);
    expect(onA.messages.map((m) => m.role)).toEqual(['system', 'user', 'ai']);
    onA.ws.close();
  });
});

describe('runledger channel watch / post (the README walkthrough)', () => {
  it('prints a posted message and its AI reply live', async () => {
    const database = await backends[0]!.create();
    const server = await serve(database);
    const url = server.url;
    try {
      const watcher = cli(['channel', 'watch', 'general', '--url', url]);
      await new Promise((r) => setTimeout(r, 500));
      const poster = cli(['channel', 'post', 'general', 'hello there', '--url', url]);
      expect((await poster.exited).code, poster.output()).toBe(0);
      expect(poster.output()).toMatch(/#1 in general \(event_id /);
      await eventually(() => /#2\s+ai\s+ai: .*hello there/.test(watcher.output()), 20_000);
      expect(watcher.output()).toMatch(/#1\s+user\s+cli: hello there/);
      watcher.proc.kill('SIGINT');
      await watcher.exited;
    } finally {
      server.proc.kill('SIGKILL');
    }
  });
});

describe('chat with the AI worker in another process on one SQLite file', () => {
  it('a socket on `serve --no-workers` receives the reply a `runledger worker` wrote', async () => {
    const database = await backends[0]!.create();
    const env = { RUNLEDGER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rl-split-')), RUNLEDGER_POLL_MS: '200' };
    const server = await serve(database, ['--no-workers'], env);
    const worker = cli(['worker', '--database', database], env);
    const url = server.url;
    try {
      await eventually(() => /worker \d+:/.test(worker.output()), 20_000);
      const socket = watch(url, 'split');
      await socket.open;
      const posted = await fetch(`${url}/channels/split/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sender_id: 'u1', role: 'user', content: 'who answers?' }),
      });
      expect(posted.status).toBe(201);
      await eventually(() => socket.messages.length === 2, 20_000);
      expect(socket.messages.map((m) => [m.seq, m.role])).toEqual([
        [1, 'user'],
        [2, 'ai'],
      ]);
      socket.ws.close();
    } finally {
      server.proc.kill('SIGKILL');
      worker.proc.kill('SIGKILL');
    }
  });
});
