import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assemble, type App } from '../app/assemble.js';
import { offlineModel } from '../models/offline.js';
import { main } from '../cli/main.js';
import { output } from '../cli/output.js';
import { databaseSource } from '../cli/source.js';
import { createEngine, type Engine } from '../engine.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { createApp } from './app.js';

const quick = workflow('quick', async (ctx) => ctx.step('one', async () => 1));
const definition = (name: string) => ({ name, steps: [{ id: 'say', type: 'log', config: { message: 'hi' } }] });
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

/**
 * Issue 42, point 7: one order for every run list (newest first: creation time descending, ties by
 * id descending), across kinds, and a stored workflow's name wherever its id works.
 */
describe.each(backends)('run lists on $name', (backend) => {
  let database: string;
  let engine: Engine;
  let services: App;
  let app: Hono;
  /** Runs of every kind, oldest first; `chosen` has an id that sorts above all generated ones. */
  let created: { chosen: string; hello: string; session: string; code: string; other: string; helloId: string };

  const get = async (path: string) => {
    const res = await app.fetch(new Request(`http://api${path}`));
    return { status: res.status, body: await res.json() };
  };
  const ids = async (query: string) =>
    ((await get(`/runs?limit=100${query}`)).body.runs as Array<{ id: string }>).map((r) => r.id);
  const cli = async (...args: string[]) => {
    let text = '';
    await main(
      ['node', 'runledger', ...args, '--database', database],
      output((t) => (text += t), false),
    );
    return text;
  };

  beforeEach(async () => {
    database = await backend.create();
    engine = await createEngine({ database, workflows: [quick], workers: false });
    services = await assemble(engine, {
      secretKey: randomBytes(32),
      allow: [],
      logger: pino({ level: 'silent' }),
      chatModel: offlineModel(),
      workers: false,
    });
    app = createApp({ engine, ...services, uiDir: null });
    const { definitions, executions } = services.workflows;
    const hello = await definitions.create(definition('hello'));
    const other = await definitions.create(definition('other'));
    const chosen = (await engine.start(quick, {}, { id: 'zzz-chosen' })).id;
    await tick();
    const helloRun = (await executions.execute(hello.id)).execution_id;
    await tick();
    const session = (await services.sessions.start({ agent: 'sample-agent', input: {}, key: 'k1' })).run_id;
    await tick();
    const code = (await engine.start(quick, {})).id;
    await tick();
    const otherRun = (await executions.execute(other.id)).execution_id;
    created = { chosen, hello: helloRun, session, code, other: otherRun, helloId: hello.id };
  });
  afterEach(async () => {
    await services.stop();
    await engine.close();
  });

  it('lists runs of every kind newest first, page by page, whatever their ids', async () => {
    const newestFirst = [created.other, created.code, created.session, created.hello, created.chosen];
    expect(await ids('')).toEqual(newestFirst);
    const paged: string[] = [];
    for (let key: string | null = null; ; ) {
      const page: { body: { runs: Array<{ id: string }>; last_key: string | null } } = await get(
        `/runs?limit=2${key ? `&last_key=${encodeURIComponent(key)}` : ''}`,
      );
      paged.push(...page.body.runs.map((r) => r.id));
      key = page.body.last_key;
      if (key === null) break;
    }
    expect(paged).toEqual(newestFirst);
    // an older client's last_key, a run's id, continues after that run
    expect(await ids(`&last_key=${created.session}`)).toEqual([created.hello, created.chosen]);
  });

  it("finds a stored workflow's executions by its name as by its id, and names the workflow in every run record", async () => {
    const named = (await get('/runs?workflow=hello')).body.runs;
    expect(named).toEqual([
      expect.objectContaining({
        id: created.hello,
        workflow: 'hello',
        workflow_id: created.helloId,
        kind: 'execution',
      }),
    ]);
    expect((await get(`/runs?workflow=${created.helloId}`)).body.runs).toEqual(named);
    expect((await get('/runs?workflow=hello&order=id')).body.runs).toEqual(named);
    expect(await ids('&workflow=quick')).toEqual([created.code, created.chosen]);
    expect((await get(`/runs/${created.hello}`)).body).toMatchObject({
      workflow: 'hello',
      workflow_id: created.helloId,
    });
    expect((await get('/runs')).body.runs.map((r: { workflow: string }) => r.workflow)).toEqual([
      'other',
      'quick',
      'runledger.session',
      'hello',
      'quick',
    ]);
  });

  it('follows a rename: the new name finds the executions, the old one finds the workflow that took it', async () => {
    await services.workflows.definitions.update(created.helloId, definition('hello-renamed'));
    expect(await ids('&workflow=hello')).toEqual([]);
    expect((await get('/runs?workflow=hello-renamed')).body.runs).toEqual([
      expect.objectContaining({ id: created.hello, workflow: 'hello-renamed' }),
    ]);
    const taken = await services.workflows.definitions.create(definition('hello'));
    const { execution_id } = await services.workflows.executions.execute(taken.id);
    expect(await ids('&workflow=hello')).toEqual([execution_id]);
  });

  it('reads the database directly in the same order, with the same names (runs list --database)', async () => {
    const source = await databaseSource(database);
    try {
      const api = (await get('/runs')).body.runs.map((r: { id: string; workflow: string }) => [r.id, r.workflow]);
      expect((await source.runs({ limit: 100 })).map((r) => [r.id, r.workflow])).toEqual(api);
      expect((await source.runs({ limit: 100, workflow: 'hello' })).map((r) => r.id)).toEqual([created.hello]);
      expect((await source.run(created.hello)).workflow).toBe('hello');
    } finally {
      await source.close();
    }
    const listed = await cli('runs', 'list', '--workflow', 'hello');
    expect(listed).toContain(created.hello);
    expect(listed.trim().split('\n')).toHaveLength(2);
    const all = await cli('runs', 'list', '--json');
    expect(JSON.parse(all).map((r: { id: string }) => r.id)).toEqual([
      created.other,
      created.code,
      created.session,
      created.hello,
      created.chosen,
    ]);
  });
});
