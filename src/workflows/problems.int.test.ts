import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../cli/main.js';
import { output } from '../cli/output.js';
import { createApp } from '../server/app.js';
import { listen } from '../server/listen.js';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storedWorkflows } from '../app/workflows.js';

const secretHeader = (name: string) => ({ Authorization: `Bearer {{secrets.${name}}}` });

/** A template problem in step 1, a shape problem in step 2 and a secret nobody stored in step 3. */
const threeProblems = {
  name: 'broken',
  steps: [
    { id: 'greet', type: 'transform', config: { template: 'Hello {{trigger.name', output_key: 'greeting' } },
    { id: 'wait', type: 'log', config: { message: 'hi', level: 'loud' } },
    {
      id: 'call',
      type: 'http_request',
      config: { url: 'https://api.example.com/x', headers: secretHeader('missing_key') },
    },
  ],
};

/** Issue 42: every problem of a workflow definition in one answer (shape, templates and references, secrets). */
describe.each(backends)('one save reports every problem of a definition on $name', (backend) => {
  let app: Hono;
  let close: () => Promise<void>;
  let url: string;

  const call = async (method: string, path: string, body: unknown) => {
    const res = await app.fetch(
      new Request(`http://api${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    );
    return { status: res.status, body: await res.json() };
  };
  const problems = async (method: string, path: string, body: unknown) => {
    const res = await call(method, path, body);
    expect(res.status).toBe(400);
    return (res.body.error.problems as Array<{ path: string; message: string }>).map((p) => p.path);
  };

  beforeEach(async () => {
    const t = await testEngine(backend);
    const workflows = storedWorkflows(t.engine, { secretKey: randomBytes(32) });
    await workflows.secrets.set('api_key', 'k');
    app = createApp({ engine: t.engine, workflows });
    const server = await listen(app, { host: '127.0.0.1', port: 0 });
    url = server.url;
    close = async () => {
      await server.close();
      await t.close();
    };
  });
  afterEach(() => close());

  it('answers the shape, the template and the secret problems together', async () => {
    expect(await problems('POST', '/workflows', threeProblems)).toEqual([
      'steps[1].config.level',
      'steps[0].config.template',
      'steps[2].config.headers.Authorization',
    ]);
  });

  it('answers template, reference and secret problems together when the shape is right, on create and on update', async () => {
    const definition = {
      name: 'almost',
      steps: [
        { id: 'greet', type: 'transform', config: { template: 'Hello {{trigger.name', output_key: 'greeting' } },
        {
          id: 'call',
          type: 'http_request',
          config: {
            url: 'https://api.example.com/x',
            headers: secretHeader('missing_key'),
            body: { x: '{{steps.later.output}}' },
          },
        },
        {
          id: 'later',
          type: 'log',
          config: { message: 'hi' },
          compensate: { url: 'https://api.example.com/undo', headers: secretHeader('other_missing') },
        },
      ],
    };
    const expected = [
      'steps[0].config.template',
      'steps[1].config',
      'steps[1].config.headers.Authorization',
      'steps[2].compensate.headers.Authorization',
    ];
    expect(await problems('POST', '/workflows', definition)).toEqual(expected);
    const saved = await call('POST', '/workflows', {
      name: 'almost',
      steps: [
        {
          id: 'call',
          type: 'http_request',
          config: { url: 'https://api.example.com/x', headers: secretHeader('api_key') },
        },
      ],
    });
    expect(saved.status).toBe(201);
    expect(await problems('PUT', `/workflows/${saved.body.id}`, definition)).toEqual(expected);
  });

  it('finds secrets in the steps of parallel branches whatever else is wrong', async () => {
    const definition = {
      name: 'fan',
      steps: [
        {
          id: 'fan',
          type: 'parallel',
          retry: 'often',
          config: {
            branches: {
              a: [
                {
                  id: 'a1',
                  type: 'http_request',
                  config: { url: 'https://x.example/a', headers: secretHeader('nope') },
                },
              ],
            },
          },
        },
      ],
    };
    expect(await problems('POST', '/workflows', definition)).toEqual(
      expect.arrayContaining(['steps[0].retry', 'steps[0].config.branches.a[0].config.headers.Authorization']),
    );
  });

  it('prints each problem on its own line in workflows apply', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runledger-apply-'));
    const file = join(dir, 'broken.json');
    writeFileSync(file, JSON.stringify(threeProblems));
    const error = await main(
      ['node', 'runledger', 'workflows', 'apply', file, '--url', url],
      output(() => {}, false),
    ).then(
      () => undefined,
      (e: Error) => e,
    );
    const lines = error!.message.split('\n');
    expect(lines[0]).toContain('3 problems');
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/^ {2}steps\[1\]\.config\.level: /),
      expect.stringMatching(/^ {2}steps\[0\]\.config\.template: /),
      expect.stringMatching(/^ {2}steps\[2\]\.config\.headers\.Authorization: names no stored secret 'missing_key'/),
    ]);
  });
});
