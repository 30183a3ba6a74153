import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createSqlitePath } from '../src/testing/databases.js';
import { cli, serve } from './child.js';

/** A function endpoint of two calls: step 'greet', then finish with its recorded value (what the journal sent back). */
async function greeter(): Promise<{ url: string; calls: string[]; close: () => Promise<void> }> {
  const calls: string[] = [];
  const read = async (req: IncomingMessage) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    return JSON.parse(body);
  };
  const server = createServer(async (req, res) => {
    const call = await read(req);
    calls.push(`${call.function}@${call.version} ${Object.keys(call.steps).join(',') || '-'}`);
    const greet = call.steps.greet as { data: string } | undefined;
    const command = greet
      ? { op: 'finish', data: { greeting: greet.data } }
      : { op: 'step', id: 'greet', data: `hello ${call.input.name}` };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(command));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, calls, close: () => new Promise((done) => server.close(() => done())) };
}

describe('runledger functions register / list / show / start / delete (issue 41)', () => {
  it('registers two versions, starts a run of the newest that the endpoint finishes, and deletes the function', async () => {
    const endpoint = await greeter();
    const server = await serve(createSqlitePath(), [], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1', RUNLEDGER_POLL_MS: '100' });
    const run = async (...args: string[]) => {
      const c = cli([...args, '--url', server.url]);
      return { exit: (await c.exited).code, output: c.output() };
    };
    try {
      const first = await run('functions', 'register', 'greet', `${endpoint.url}v1`, '--timeout', '5s');
      expect(first.exit, first.output).toBe(0);
      expect(first.output).toContain(`registered greet version 1 → ${endpoint.url}v1`);
      expect(first.output).toMatch(/secret: [0-9a-f]{64} {2}\(shown once/);
      const second = await run(
        'functions',
        'register',
        'greet',
        endpoint.url,
        '--version',
        '2',
        '--secret',
        'a-secret-of-24-characters',
        '--retries',
        '2',
      );
      expect(second.exit, second.output).toBe(0);
      expect(second.output).toContain('registered greet version 2');
      expect(second.output).not.toContain('secret:');

      const list = await run('functions', 'list');
      expect(list.output).toMatch(/NAME\s+VERSION\s+URL\s+VERSIONS\s+UPDATED\ngreet\s+2\s+http:\S+\s+2\s+\d{4}-/);
      const shown = JSON.parse((await run('functions', 'show', 'greet', '--json')).output);
      expect(shown).toMatchObject({ name: 'greet', version: '2', timeout_ms: 5000, retries: 2 });
      expect(shown.versions).toEqual([
        { version: '1', url: `${endpoint.url}v1` },
        { version: '2', url: endpoint.url },
      ]);
      expect(shown).not.toHaveProperty('secret');
      expect((await run('functions', 'show', 'greet')).output).toContain(
        `greet: new runs start on version 2\n  version 1: ${endpoint.url}v1\n  version 2: ${endpoint.url}  (current)\n` +
          'timeout: 5s per call, 2 attempts per step',
      );

      const started = await run(
        'functions',
        'start',
        'greet',
        '--input',
        '{"name":"Ada"}',
        '--id',
        'greet-ada',
        '--wait',
      );
      expect(started.exit, started.output).toBe(0);
      expect(started.output).toContain('run greet-ada of greet version 2');
      expect(started.output).toMatch(/run greet-ada success → \{"greeting":"hello Ada"\}/);
      expect(endpoint.calls).toEqual(['greet@2 -', 'greet@2 greet']);
      const again = JSON.parse((await run('functions', 'start', 'greet', '--id', 'greet-ada', '--json')).output);
      expect(again).toEqual({ run_id: 'greet-ada', function: 'greet', version: '2' });
      expect(endpoint.calls).toHaveLength(2);

      const badRetries = await run('functions', 'register', 'greet', endpoint.url, '--retries', '0');
      expect(badRetries.exit).not.toBe(0);
      expect(badRetries.output).toContain('--retries');

      expect((await run('functions', 'delete', 'greet')).output).toContain('deleted greet');
      const gone = await run('functions', 'show', 'greet');
      expect(gone.exit).not.toBe(0);
      expect(gone.output).toContain('not found');
      expect((await run('functions', 'list')).output).toContain('no functions');
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
      await endpoint.close();
    }
  }, 120_000);
});
