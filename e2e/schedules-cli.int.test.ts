import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { runCli as run, serve, type Served } from './child.js';

/* `runledger schedules …`, the real binary against a real server. */

interface Shown {
  id: string;
  name: string | null;
  cron: string;
  timezone: string;
  target: Record<string, string>;
  input: unknown;
  overlap: string;
  paused: boolean;
  next: string[];
  state: { fired: number; last_run_id: string | null };
}

describe.each(backends)('runledger schedules on $name', (backend) => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-schedules-cli-'));
  let server: Served;
  const at = (...args: string[]) => run([...args, '--url', server.url]);
  const ok = async (...args: string[]) => {
    const answer = await at(...args);
    expect(answer.code, answer.stderr).toBe(0);
    return answer.stdout;
  };
  const shown = async (id: string) => JSON.parse(await ok('schedules', 'show', id, '--json')) as Shown;

  beforeAll(async () => {
    const module = join(dir, 'workflows.mjs');
    writeFileSync(
      module,
      `import { workflow } from '${resolve('dist/index.js')}';
export const tick = workflow('cli-tick', async (ctx, input) => ctx.step('tick', async () => input));`,
    );
    server = await serve(await backend.create(), ['--workflows', module]);
  }, 60_000);
  afterAll(() => void server?.proc.kill('SIGKILL'));

  it('creates with the next ten slots, lists, shows, edits, pauses, resumes and deletes', {
    timeout: 300_000,
  }, async () => {
    const created = await ok(
      'schedules',
      'create',
      ...['--name', 'weekday-report', '--cron', '0 9 * * 1-5', '--timezone', 'Europe/Berlin'],
      ...['--workflow', 'cli-tick', '--input', '{"at":"$.slot"}'],
    );
    const id = /created (sch_\w+) 'weekday-report': 0 9 \* \* 1-5 \(Europe\/Berlin\) → workflow cli-tick/.exec(
      created,
    )?.[1];
    expect(id, created).toBeDefined();
    const slots = created.match(/^ {2}\d{4}-\d\d-\d\dT0[78]:00:00\.000Z$/gm) ?? [];
    expect(slots, created).toHaveLength(10);
    expect(created).toContain('next 10 slots (UTC; the cron is read in Europe/Berlin):');

    expect(await ok('schedules', 'list')).toMatch(new RegExp(`${id}\\s+weekday-report\\s+0 9 \\* \\* 1-5 .*active`));
    expect(await ok('schedules', 'show', id!)).toContain('cron:      0 9 * * 1-5 (Europe/Berlin)');

    const edited = await ok('schedules', 'edit', id!, '--cron', '30 6 * * *', '--overlap', 'allow');
    expect(edited).toContain(`updated ${id}: 30 6 * * * (Europe/Berlin) → workflow cli-tick`);
    expect(await shown(id!)).toMatchObject({
      name: 'weekday-report',
      cron: '30 6 * * *',
      timezone: 'Europe/Berlin',
      target: { workflow: 'cli-tick' },
      input: { at: '$.slot' },
      overlap: 'allow',
      paused: false,
    });

    expect(await ok('schedules', 'pause', id!)).toContain(`paused ${id}`);
    expect(await ok('schedules', 'list')).toMatch(new RegExp(`${id}.*paused`));
    expect(await ok('schedules', 'resume', id!)).toMatch(new RegExp(`resumed ${id}: next slot \\d{4}-`));

    // a stored workflow by its name, as `runledger start` takes it: the schedule names its id
    const greet = join(dir, 'greet.json');
    const steps = [{ id: 'greet', type: 'transform', config: { template: 'at {{trigger.at}}' } }];
    writeFileSync(greet, JSON.stringify({ name: 'cli-greet', steps }));
    const applied = /created (wf_\w+)/.exec(await ok('workflows', 'apply', greet))?.[1];
    expect(await ok('schedules', 'edit', id!, '--workflow', 'cli-greet')).toContain(`→ workflow ${applied}`);
    expect((await shown(id!)).target).toEqual({ workflow: applied });

    expect(await ok('schedules', 'delete', id!)).toContain(`deleted ${id}`);
    const gone = await at('schedules', 'show', id!);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain(`schedule ${id} not found`);
  });

  it('fires a schedule it created, and backfills a past window: a run per slot', { timeout: 300_000 }, async () => {
    const created = await ok('schedules', 'create', '--cron', '* * * * * *', '--workflow', 'cli-tick', '--json');
    const { id } = JSON.parse(created) as Shown;
    expect((JSON.parse(created) as { next_ten: string[] }).next_ten).toHaveLength(10);
    const fired = await eventually(async () => {
      const s = await shown(id);
      return s.state.fired > 0 ? s : undefined;
    }, 20_000);
    const run = (await (await fetch(`${server.url}/runs/${fired.state.last_run_id}`)).json()) as { input: unknown };
    expect(run.input).toMatchObject({ schedule_id: id, catch_up: false });
    await ok('schedules', 'pause', id);

    // an hourly schedule over three past hours: three slots, three runs, the same ones when asked again
    const hourly = JSON.parse(
      await ok('schedules', 'create', '--cron', '0 * * * *', '--workflow', 'cli-tick', '--json'),
    );
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    const window = ['--from', new Date(hour - 3 * 3_600_000).toISOString(), '--to', new Date(hour).toISOString()];
    const text = await ok('schedules', 'backfill', hourly.id, ...window);
    expect(text).toContain('3 slots from');
    const first = JSON.parse(await ok('schedules', 'backfill', hourly.id, ...window, '--json')) as {
      runs: Array<{ slot: string; run_id: string; kind: string }>;
    };
    expect(first.runs.map((r) => r.slot)).toEqual([3, 2, 1].map((h) => new Date(hour - h * 3_600_000).toISOString()));
    expect(first.runs.map((r) => r.kind)).toEqual(['workflow', 'workflow', 'workflow']);
    for (const r of first.runs) expect(text).toContain(r.run_id);
  });

  it('tells a bad field by its flag: the server’s 400s and its own', { timeout: 300_000 }, async () => {
    const bad = await at(
      'schedules',
      'create',
      '--cron',
      'every day',
      '--timezone',
      'Mars/Olympus',
      '--workflow',
      'nope',
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('POST /schedules: 400');
    expect(bad.stderr).toMatch(/^ {2}timezone \(--timezone\): is not an IANA time zone .*'Mars\/Olympus'/m);
    expect(bad.stderr).toMatch(/^ {2}target\.workflow \(--workflow\): names no stored workflow .*'nope'/m);

    const noTarget = await at('schedules', 'create', '--cron', '* * * * *');
    expect(noTarget.code).not.toBe(0);
    expect(noTarget.stderr).toContain('--workflow: a schedule needs a target');

    const { id } = JSON.parse(
      await ok('schedules', 'create', '--cron', '0 0 1 1 *', '--workflow', 'cli-tick', '--json'),
    );
    const overlap = await at('schedules', 'edit', id, '--overlap', 'sometimes');
    expect(overlap.code).not.toBe(0);
    expect(overlap.stderr).toContain(`PUT /schedules/${id}: 400, 1 problem\n  overlap (--overlap): must be one of`);
    const cron = await at('schedules', 'edit', id, '--cron', 'every day');
    expect(cron.code).not.toBe(0);
    expect(cron.stderr).toMatch(/^ {2}cron \(--cron\): /m);
    const window = await at('schedules', 'backfill', id, '--from', 'yesterday', '--to', new Date().toISOString());
    expect(window.code).not.toBe(0);
    expect(window.stderr).toContain("--from: must be an ISO 8601 time such as 2026-11-01T00:00:00Z (got 'yesterday')");
    const input = await at('schedules', 'edit', id, '--input', '{not json');
    expect(input.stderr).toContain('--input: not JSON');
  });
});
