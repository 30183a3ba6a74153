import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type Server } from '../src/server/start.js';
import { createSqlitePath } from '../src/testing/databases.js';
import { fuzzFrames } from './fuzz-frames.js';
import { seeded } from './lib/random.js';

describe('the WebSocket frame fuzzer', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('finds nothing wrong with the server, sends the same frames for one seed, and reports the internal errors of a server whose posts fail', {
    timeout: 60_000,
  }, async () => {
    server = await startServer({
      database: createSqlitePath(),
      port: 0,
      workers: false,
      dataDir: mkdtempSync(join(tmpdir(), 'rl-frames-')),
      logger: pino({ level: 'silent' }),
    });
    const first = await fuzzFrames(server.url, { random: seeded(7), connections: 60 });
    expect(first.failures).toEqual([]);
    expect(first.connections).toBe(60);
    // every way a connection ends shows up in 60: protocol error, bad UTF-8, too big, cut by us, still open
    expect(Object.keys(first.outcomes)).toEqual(expect.arrayContaining(['1002', '1007', '1009', 'we-cut', 'open']));
    const again = await fuzzFrames(server.url, { random: seeded(7), connections: 60 });
    expect(again).toEqual(first);

    const real = server.channels.post.bind(server.channels);
    server.channels.post = async () => {
      throw new Error('the store broke');
    };
    const broken = await fuzzFrames(server.url, { random: seeded(7), connections: 60 });
    server.channels.post = real;
    expect(broken.failures.filter((f) => /^answered 500 over the socket/.test(f.problem)).length).toBeGreaterThan(0);
    expect(broken.failures.map((f) => f.problem)).toContain(
      'a well-behaved client on the channel stopped receiving new messages',
    );
  });
});
