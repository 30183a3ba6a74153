import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { findLeaks } from '../../chaos/secret-grep.js';
import { assemble, type App } from '../app/assemble.js';
import { offlineModel } from '../models/offline.js';
import type { Engine } from '../engine.js';
import { newId } from '../ids.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { parseDefinition } from '../workflows/schema.js';
import { createApp } from './app.js';

// The resolver of a machine with no DNS of its own: every name is unknown, answered the way Node
// words it. A host made of a secret would otherwise be sent to a real resolver, off this machine.
vi.mock('node:dns/promises', () => ({
  lookup: async (host: string) => {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), {
      code: 'ENOTFOUND',
      syscall: 'getaddrinfo',
      hostname: host,
    });
  },
}));

/** Issue 49, defect 9: a URL parser lower-cases this host, ends it at `/` and percent-encodes the rest into the path. */
const SECRET = 'sk_live_Q7x+9f/8e="7d c6';
const REPRO = { method: 'GET', url: 'http://{{secrets.x | upper}}.invalid/x' };

/** The secret's pieces a URL parser makes (cut at `/ \ ? # @ :`, 4 characters or more), each raw, percent-encoded and JSON-escaped. */
function pieceForms(secret: string): string[] {
  const pieces = secret.split(/[/\\?#@:]/).filter((piece) => piece.length >= 4);
  const pathEncoded = (text: string) =>
    text.replace(/[ "#<>?`{}]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
  return [secret, ...pieces].flatMap((piece) => [
    piece,
    encodeURIComponent(piece),
    pathEncoded(piece),
    JSON.stringify(piece).slice(1, -1),
  ]);
}

describe.each(backends)('a secret in a URL host on $name', (backend) => {
  let engine: Engine;
  let services: App;
  let app: Hono;
  let logs: string[];
  let close: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.fetch(
      new Request(`http://api${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );
    const text = await res.text();
    return { status: res.status, text, body: text ? JSON.parse(text) : null };
  };

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 50 });
    engine = t.engine;
    logs = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) });
    services = await assemble(engine, {
      secretKey: randomBytes(32),
      allow: [],
      logger,
      chatModel: offlineModel(),
      workers: true,
    });
    app = createApp({ engine, ...services, uiDir: null });
    close = async () => {
      await services.stop();
      await t.close();
    };
    expect((await call('POST', '/secrets', { name: 'x', value: SECRET })).status).toBe(201);
    expect((await call('POST', '/secrets', { name: 'url', value: `http://${SECRET}.invalid/x` })).status).toBe(201);
  });
  afterEach(() => close());

  it('refuses a secret in the host of a URL when the workflow is saved, naming the field', async () => {
    const refused = await call('POST', '/workflows', {
      name: 'repro',
      steps: [{ id: 'call', type: 'http_request', config: REPRO }],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.problems).toEqual([
      { path: 'steps[0].config.url', message: expect.stringMatching(/\{\{secrets\.x \| upper\}\} is in the host/) },
    ]);
    const compensate = { method: 'POST', url: 'https://api.example.com/{{secrets.x}}' };
    const hosts = [
      'https://{{secrets.x}}/a',
      'https://api-{{ secrets.x }}.example.com',
      'https://u:{{secrets.x}}@example.com/',
      'http://example.com:{{secrets.x}}/',
      'https://{{trigger.h}}{{secrets.x}}/',
    ];
    for (const url of hosts) {
      const answer = await call('POST', '/workflows', {
        name: 'hosts',
        steps: [{ id: 'a', type: 'http_request', config: { method: 'GET', url }, compensate }],
      });
      expect([url, answer.status, answer.body.error?.problems?.map((p: { path: string }) => p.path)]).toEqual([
        url,
        400,
        ['steps[0].config.url'],
      ]);
    }
    // in the path, the query or the whole URL a secret is masked as it is sent; those are saved
    for (const url of [
      'https://api.example.com/{{secrets.x}}?k={{secrets.x | upper}}',
      '{{secrets.url}}',
      'https://{{trigger.host}}/{{secrets.x}}',
    ]) {
      const saved = await call('POST', '/workflows', {
        name: `ok-${url.length}`,
        steps: [{ id: 'a', type: 'http_request', config: { method: 'GET', url } }],
      });
      expect([url, saved.status]).toEqual([url, 201]);
    }
  });

  it('leaks no form of the secret through the error of a URL whose host it is, in the journal, the API or the logs', async () => {
    // saved before the refusal existed: a stored definition runs as it was saved
    const old = newId('wf');
    const definition = parseDefinition({
      name: 'repro',
      steps: [
        {
          id: 'call',
          type: 'http_request',
          retry: { max_attempts: 1 },
          config: { ...REPRO, url: 'http://example.com/x' },
        },
      ],
    });
    Object.assign(definition.steps[0]!.config, REPRO);
    await engine.journal.append(`workflow:${old}`, [{ type: 'workflow.saved', data: { version: 1, definition } }]);
    const ids = [old];
    for (const url of ['{{secrets.url}}', '{{secrets.url | upper}}']) {
      const saved = await call('POST', '/workflows', {
        name: `whole ${url}`,
        steps: [{ id: 'call', type: 'http_request', retry: { max_attempts: 1 }, config: { method: 'GET', url } }],
      });
      expect(saved.status).toBe(201);
      ids.push(saved.body.id);
    }
    const answers: string[] = [];
    for (const id of ids) {
      const started = await call('POST', `/workflows/${id}/execute`, {});
      expect([started.status, started.text]).toEqual([202, expect.anything()]);
      const path = `/workflows/${id}/executions/${started.body.execution_id}`;
      const done = await eventually(async () => {
        const answer = await call('GET', path);
        return ['success', 'failed'].includes(answer.body.status) ? answer : undefined;
      });
      expect(done.body.status).toBe('failed');
      // the failure is there to be searched: the resolver's answer, with the host masked
      expect(done.text).toMatch(/cannot resolve/);
      answers.push(done.text, (await call('GET', `${path}/events`)).text);
    }
    const journal = JSON.stringify(await engine.journal.readAll({ limit: 100_000 }));
    expect(journal).toContain('getaddrinfo ENOTFOUND');
    const haystacks = [
      { where: 'journal', content: journal },
      { where: 'api', content: answers.join('\n') },
      { where: 'logs', content: logs.join('') },
    ];
    expect(findLeaks(haystacks, [SECRET])).toEqual([]);
    for (const { where, content } of haystacks) {
      const lower = content.toLowerCase();
      for (const form of pieceForms(SECRET))
        expect(lower.includes(form.toLowerCase()), `${where}: ${form}`).toBe(false);
    }
  });
});
