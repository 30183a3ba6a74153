import { describe, expect, it } from 'vitest';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { postHead, slowClient } from '../src/testing/slow-client.js';
import { cli, serve } from './child.js';

/** `runledger serve` reads its request bounds from the environment (needs `tsc -p tsconfig.build.json`). */
describe('runledger serve with RUNLEDGER_HEADERS_TIMEOUT_MS and RUNLEDGER_REQUEST_TIMEOUT_MS', () => {
  it('cuts off a body trickled to /callbacks/* within the bound it was given', async () => {
    const server = await serve(createSqlitePath(), ['--no-workers'], {
      RUNLEDGER_HEADERS_TIMEOUT_MS: '1000',
      RUNLEDGER_REQUEST_TIMEOUT_MS: '1500',
    });
    try {
      const body = '{"ok":true,"padding":"................"}';
      const { answer, closedAfterMs } = await slowClient(
        server.url,
        postHead(server.url, '/callbacks/cb_nope', body.length),
        body,
      );
      expect(closedAfterMs, 'the connection was still open after 8 s').not.toBeNull();
      expect(closedAfterMs!).toBeGreaterThanOrEqual(1_450);
      expect(closedAfterMs!).toBeLessThan(1_500 + 1_000 + 1_000);
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  }, 30_000);

  it.each([
    [{ RUNLEDGER_REQUEST_TIMEOUT_MS: 'soon' }, /RUNLEDGER_REQUEST_TIMEOUT_MS.*whole number/],
    [{ RUNLEDGER_HEADERS_TIMEOUT_MS: '0' }, /RUNLEDGER_HEADERS_TIMEOUT_MS.*whole number/],
    [
      { RUNLEDGER_HEADERS_TIMEOUT_MS: '20000', RUNLEDGER_REQUEST_TIMEOUT_MS: '10000' },
      /RUNLEDGER_HEADERS_TIMEOUT_MS 20000 > RUNLEDGER_REQUEST_TIMEOUT_MS 10000/,
    ],
  ])(
    'refuses to start with %o, naming the variable',
    async (env, message) => {
      const run = cli(['serve', '--port', '0', '--no-workers', '--database', createSqlitePath()], env);
      const started = eventually(() => /serving http/.test(run.output()) || undefined, 20_000).then(
        () => 'serving' as const,
      );
      const ended = await Promise.race([run.exited, started]);
      if (ended === 'serving') run.proc.kill('SIGTERM');
      expect(ended, run.output()).not.toBe('serving');
      expect(ended).toMatchObject({ code: 1 });
      expect(run.output()).toMatch(message);
    },
    30_000,
  );
});
