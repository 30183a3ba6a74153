import type { Command } from 'commander';
import { ApiError } from '../client/client.js';
import { ScheduleClient, type ScheduleRecord } from '../client/schedules.js';
import { ValidationError } from '../errors.js';
import { DEFAULT_URL, json, remote, urlFlags, whole } from './options.js';
import { plural, type Output } from './output.js';
import { findByName } from './workflows.js';

/** `client(options)`'s server and token, with the schedule routes. */
const scheduleClient = (options: { url?: string; token?: string }) =>
  new ScheduleClient({
    url: options.url ?? (process.env.RUNLEDGER_URL || DEFAULT_URL),
    token: options.token ?? (process.env.RUNLEDGER_TOKEN || undefined),
  });

/** The flag of each field of `POST /schedules`, to name it in the server's 400s. */
const FLAGS: Record<string, string> = {
  name: '--name',
  cron: '--cron',
  timezone: '--timezone',
  'target.workflow': '--workflow',
  'target.agent': '--agent',
  target: '--workflow or --agent',
  input: '--input',
  overlap: '--overlap',
  catch_up: '--catch-up',
  from: '--from',
  to: '--to',
};

interface DefinitionFlags {
  cron?: string;
  timezone?: string;
  workflow?: string;
  agent?: string;
  input?: string;
  name?: string;
  overlap?: string;
  catchUp?: string;
}

/** `runledger schedules …`: cron schedules on a running server (`/schedules`). */
export function scheduleCommands(program: Command, out: Output): void {
  const schedules = program
    .command('schedules')
    .description('cron schedules: each slot starts a run (list, show, create, edit, pause, resume, backfill, delete)');

  remote(schedules.command('list'))
    .description('schedules, newest first, with their next slot and what their last slot came to')
    .option('--limit <n>', 'at most this many (1 to 500)', '100')
    .action(async (options) => {
      const page = await told(scheduleClient(options).schedules({ limit: whole('--limit', options.limit, 1, 500) }));
      if (options.json) return out.json(page);
      out.table(
        ['ID', 'NAME', 'CRON', 'TARGET', 'STATE', 'NEXT', 'LAST'],
        page.schedules.map((s) => [
          s.id,
          s.name ?? '',
          `${s.cron} (${s.timezone})`,
          target(s),
          s.paused ? 'paused' : 'active',
          s.next[0] ?? '',
          s.state.last_slot ? `${s.state.last_slot} ${s.state.last_outcome}` : '',
        ]),
        'no schedules yet (runledger schedules create --cron … --workflow …)',
      );
    });

  remote(schedules.command('show <id>'))
    .description('one schedule: its definition, next slots and what its slots came to')
    .action(async (id: string, options) => {
      const s = await told(scheduleClient(options).schedule(id));
      if (options.json) return out.json(s);
      for (const line of describe(s)) out.line(line);
    });

  definition(remote(schedules.command('create')))
    .description('create a schedule (POST /schedules) and print its next ten slots')
    .action(async (options) => {
      if (options.cron === undefined)
        throw new ValidationError('--cron', 'is required: 5 fields, or 6 with leading seconds (`*/5 * * * *`)');
      if (options.workflow === undefined && options.agent === undefined)
        throw new ValidationError('--workflow', 'a schedule needs a target: --workflow <id or name> or --agent <name>');
      const c = scheduleClient(options);
      const created = await told(c.createSchedule(body(await stored(c, options))));
      const { next } = await told(c.previewSchedule(created.cron, created.timezone));
      if (options.json) return out.json({ ...created, next_ten: next });
      out.line(
        `created ${created.id}${created.name ? ` '${created.name}'` : ''}: ${created.cron} (${created.timezone}) → ${target(created)}`,
      );
      nextTen(out, next, created.timezone);
      out.line(`pause it:  runledger schedules pause ${created.id}${urlFlags(options)}`);
    });

  definition(remote(schedules.command('edit <id>')))
    .description('change a schedule (PUT /schedules/{id}): the flags given replace those fields, the rest stay')
    .action(async (id: string, options) => {
      const c = scheduleClient(options);
      const current = await told(c.schedule(id));
      const updated = await told(c.updateSchedule(id, body(await stored(c, options), current)));
      const { next } = await told(c.previewSchedule(updated.cron, updated.timezone));
      if (options.json) return out.json({ ...updated, next_ten: next });
      out.line(`updated ${updated.id}: ${updated.cron} (${updated.timezone}) → ${target(updated)}`);
      if (updated.paused) out.line('it is paused: it fires nothing until resumed');
      else nextTen(out, next, updated.timezone);
    });

  remote(schedules.command('pause <id>'))
    .description('pause a schedule: it fires nothing, in any process, until resumed')
    .action(async (id: string, options) => {
      const s = await told(scheduleClient(options).pauseSchedule(id));
      if (options.json) return out.json(s);
      out.line(
        `paused ${s.id}: it fires nothing until resumed (runledger schedules resume ${s.id}${urlFlags(options)})`,
      );
    });

  remote(schedules.command('resume <id>'))
    .description('resume a paused schedule: it fires from the next slot on (those missed while paused are not fired)')
    .action(async (id: string, options) => {
      const s = await told(scheduleClient(options).resumeSchedule(id));
      if (options.json) return out.json(s);
      out.line(`resumed ${s.id}: next slot ${s.next[0] ?? '(none)'}`);
    });

  remote(schedules.command('backfill <id>'))
    .description('start a run for each slot of a past window (from ≤ slot < to, at most 100 slots)')
    .requiredOption('--from <time>', 'the window begins (ISO 8601, e.g. 2026-11-01T00:00:00Z)')
    .requiredOption('--to <time>', 'the window ends, not in the future (ISO 8601)')
    .action(async (id: string, options) => {
      const from = instant('--from', options.from);
      const to = instant('--to', options.to);
      const { runs } = await told(scheduleClient(options).backfillSchedule(id, { from, to }));
      if (options.json) return out.json({ runs });
      out.line(`${plural(runs.length, 'slot')} from ${from} to ${to} (a slot that had its run keeps it):`);
      out.table(
        ['SLOT', 'RUN', 'KIND'],
        runs.map((r) => [r.slot, r.run_id, r.kind]),
        'no slot in that window',
      );
    });

  remote(schedules.command('delete <id>'))
    .description('delete a schedule: no slot fires after this; runs it started go on')
    .action(async (id: string, options) => {
      await told(scheduleClient(options).deleteSchedule(id));
      if (options.json) return out.json({ id, deleted: true });
      out.line(`deleted ${id}`);
    });
}

/** Adds the flags of a schedule's fields. */
function definition(cmd: Command): Command {
  return cmd
    .option('--cron <expr>', '5 fields, or 6 with leading seconds; @hourly, @daily … too')
    .option('--timezone <zone>', 'the IANA time zone the cron is read in (default UTC)')
    .option('--workflow <id-or-name>', 'the target: a stored workflow (its id or name) or a code workflow (its name)')
    .option('--agent <name>', 'the target: an agent (a session per slot)')
    .option(
      '--input <json>',
      'the run\'s input: a mapping of the tick { schedule_id, slot, catch_up } (default "$": all of it)',
    )
    .option('--name <name>', 'a name to know it by')
    .option(
      '--overlap <mode>',
      'skip (default): a slot passes while the previous run has not ended; allow: it starts anyway',
    )
    .option('--catch-up <mode>', 'after downtime: skip (default) the missed slots, or run one of them (the latest)');
}

/** The request body: the flags given over `base` (an edit's current schedule). */
function body(flags: DefinitionFlags, base?: ScheduleRecord): Record<string, unknown> {
  if (flags.workflow !== undefined && flags.agent !== undefined)
    throw new ValidationError('--workflow', 'and --agent both name a target: give one');
  const out: Record<string, unknown> = base
    ? {
        ...(base.name === null ? {} : { name: base.name }),
        cron: base.cron,
        timezone: base.timezone,
        target: base.target,
        input: base.input,
        overlap: base.overlap,
        catch_up: base.catch_up,
      }
    : {};
  const set = (field: string, value: unknown) => {
    if (value !== undefined) out[field] = value;
  };
  set('name', flags.name);
  set('cron', flags.cron);
  set('timezone', flags.timezone);
  set('target', flags.workflow !== undefined ? { workflow: flags.workflow } : undefined);
  set('target', flags.agent !== undefined ? { agent: flags.agent } : undefined);
  set('input', flags.input === undefined ? undefined : json('--input', flags.input));
  set('overlap', flags.overlap);
  set('catch_up', flags.catchUp);
  return out;
}

/** As `runledger start` takes it: `--workflow` names a stored workflow (by name too) before a code workflow. */
async function stored(c: ScheduleClient, flags: DefinitionFlags): Promise<DefinitionFlags> {
  if (flags.workflow === undefined || flags.workflow.startsWith('wf_')) return flags;
  return { ...flags, workflow: (await findByName(c, flags.workflow)) ?? flags.workflow };
}

/** The server's 400 told with the flag of each field: one problem a line. */
async function told<T>(answer: Promise<T>): Promise<T> {
  try {
    return await answer;
  } catch (error) {
    if (!(error instanceof ApiError) || error.problems.length === 0) throw error;
    const lines = error.problems.map((p) => {
      const flag = FLAGS[p.path] ?? FLAGS[p.path.split(/[.[]/)[0]!];
      return `  ${p.path}${flag ? ` (${flag})` : ''}: ${p.message}`;
    });
    // `POST /schedules: 400 …`: the request, then each problem
    const request = error.message.split(': ')[0];
    throw new ApiError(
      error.status,
      error.code,
      `${request}: ${error.status}, ${plural(lines.length, 'problem')}\n${lines.join('\n')}`,
      error.problems,
    );
  }
}

/** An ISO 8601 time with its offset, as the backfill route takes it; named by its flag when it is not one. */
function instant(flag: string, value: string): string {
  const ms = Date.parse(value);
  if (!/^\d{4}-\d\d-\d\dT/.test(value) || Number.isNaN(ms))
    throw new ValidationError(flag, `must be an ISO 8601 time such as 2026-11-01T00:00:00Z (got '${value}')`);
  return new Date(ms).toISOString();
}

const target = (s: ScheduleRecord) =>
  'agent' in s.target ? `agent ${s.target.agent}` : `workflow ${s.target.workflow}`;

function nextTen(out: Output, next: string[], timezone: string): void {
  out.line(`next ${plural(next.length, 'slot')} (UTC; the cron is read in ${timezone}):`);
  for (const slot of next) out.line(`  ${slot}`);
}

function describe(s: ScheduleRecord): string[] {
  const { state } = s;
  return [
    `${s.id}${s.name ? ` '${s.name}'` : ''}  ${s.paused ? 'paused' : 'active'}`,
    `cron:      ${s.cron} (${s.timezone})`,
    `target:    ${target(s)}`,
    `input:     ${JSON.stringify(s.input)}`,
    `overlap:   ${s.overlap}   catch-up: ${s.catch_up}`,
    `next:      ${s.next.length ? s.next.join('  ') : '(none: paused)'}`,
    `last slot: ${state.last_slot ? `${state.last_slot} ${state.last_outcome}${state.last_run_id ? ` (run ${state.last_run_id})` : ''}` : '(none yet)'}`,
    ...(state.last_error ? [`last error: ${state.last_error}`] : []),
    `slots:     ${state.fired} fired, ${state.skipped} skipped, ${state.failed} failed`,
    `created ${s.created_at}, changed ${s.updated_at}`,
  ];
}
