import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poll, sectionBlocks, shellCommands, Terminals } from './readme-walk-shell.js';

/**
 * The README followed top to bottom as a newcomer does, in real terminals on a fresh clone: every shell
 * block of every section, in order, typed into tmux (the lines come from README.md, so a README change is
 * followed), with what each promises asserted, and above all that no step collides with an earlier one:
 * no port in use, no server left running with other settings taking a later section's steps, exit codes 0.
 *
 * The ports are the README's own (8080, 8081, 9000, 9090): the walk is about those lines as written. No
 * other test file uses them (grep e2e/), and the walk checks they are free before it starts.
 */
const repo = resolve('.');
const PORTS = [8080, 8081, 9000, 9090];
const COLLISION = /EADDRINUSE|is in use on|warning: process \S+ has|ECONNREFUSED|Failed to connect|Connection refused/;

/**
 * A fresh clone: `git clone` of this repository (its committed tree: a pristine working directory, no
 * database file) with node_modules linked entry by entry from this checkout. The README says `npm ci`;
 * that took 1 min 33 s here on a loaded 2-core machine, most of the walk's budget, and installs the same
 * locked packages: the link stands in for it. prepare.mjs (what npm ci runs) then builds dist/ and the
 * dashboard unless the copied build stamp says they were built from exactly these sources.
 */
function freshClone(): string {
  const clone = join(mkdtempSync(join(tmpdir(), 'runledger-walk-')), 'runledger');
  execFileSync('git', ['clone', '--quiet', repo, clone]);
  mkdirSync(join(clone, 'node_modules'));
  for (const entry of readdirSync(join(repo, 'node_modules')))
    if (entry !== '.cache') symlinkSync(join(repo, 'node_modules', entry), join(clone, 'node_modules', entry));
  const stamp = join('node_modules', '.cache', 'runledger');
  if (existsSync(join(repo, stamp))) {
    cpSync(join(repo, stamp), join(clone, stamp), { recursive: true });
    cpSync(join(repo, 'dist'), join(clone, 'dist'), { recursive: true });
  }
  try {
    execFileSync(process.execPath, ['scripts/prepare.mjs'], {
      cwd: clone,
      encoding: 'utf8',
      stdio: 'pipe',
      timeout: 240_000,
    });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(
      `a fresh clone of this repository's HEAD does not build (npm ci would fail the same way):\n${`${stdout ?? ''}${stderr ?? ''}`.slice(-3000)}`,
    );
  }
  return clone;
}

const listening = (port: number) =>
  new Promise<boolean>((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => done(socket.destroy() !== undefined));
    socket.once('error', () => done(false));
  });

async function waitPort(port: number, open: boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await listening(port)) !== open) {
    if (Date.now() > deadline) throw new Error(`port ${port} still ${open ? 'closed' : 'open'} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// README_WALK_FILE=<file> follows another README: how the walk was seen to fail on one that collides (the Quick
// start's server not stopped before the Stored workflows' server: that section's execution fails)
const readme = readFileSync(process.env.README_WALK_FILE ?? join(repo, 'README.md'), 'utf8');
const section = (heading: string) =>
  readme.slice(readme.indexOf(`\n## ${heading}`), readme.indexOf('\n## ', readme.indexOf(`\n## ${heading}`) + 1));
const commands = (heading: string) => sectionBlocks(readme, heading).flatMap(shellCommands);
/** Ids the README writes as `wf_01…` and so on, taken from the answers before them as a person would. */
const ids: Record<string, string> = {};
const fill = (line: string) =>
  line.replace(/\b(wf|ex|evt|ses|tc|rule)_01…/g, (placeholder, kind: string) => ids[kind] ?? placeholder);
const take = (kind: string, text: string, pattern: RegExp) => {
  const id = pattern.exec(text)?.[1];
  if (!id) throw new Error(`no ${kind}_ id in:\n${text}`);
  ids[kind] = id;
};

describe('the README, top to bottom, in terminals on a fresh clone (tmux)', () => {
  let clone = '';
  let t: Terminals;

  beforeAll(async () => {
    for (const port of PORTS)
      if (await listening(port)) throw new Error(`port ${port} is in use before the walk: the README's lines need it`);
    clone = freshClone();
    t = new Terminals(clone, {
      HOME: process.env.HOME ?? '/root',
      PATH: process.env.PATH ?? '',
      TERM: 'xterm-256color',
      LANG: 'C.UTF-8',
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
    });
    t.open('one');
    t.open('two');
  }, 300_000);

  afterAll(async () => {
    t?.kill(); // the shells get SIGHUP and pass it to their jobs
    for (const port of PORTS) await waitPort(port, false, 15_000).catch(() => undefined);
    if (clone) rmSync(dirname(clone), { recursive: true, force: true });
  });

  /** Ctrl-C to the server of `tag` only where the README tells the reader to stop it: a README that does not leaves it running, as a reader would. */
  let spare = 0;
  async function stopIfTold(heading: string, told: string, window: string, tag: string): Promise<string> {
    // the README's prose wraps anywhere
    if (!section(heading).replace(/\s+/g, ' ').toLowerCase().includes(told.toLowerCase())) {
      const other = `spare-${++spare}`; // the reader goes on in another terminal
      t.open(other);
      return other;
    }
    expect((await t.interrupt(window, tag)).printed).toMatch(/stopped/);
    return window;
  }

  /** Types each command of `lines` in `window`; `check` asserts what the README promises of it (default: exit code 0). */
  async function follow(
    window: string,
    lines: string[],
    check: (line: string, printed: string, code: number) => Promise<void> | void = () => undefined,
  ) {
    for (const raw of lines) {
      const line = fill(raw);
      const { printed, code } = await t.run(window, line, 60_000);
      expect(printed, `"${line}" collided`).not.toMatch(COLLISION);
      await check(line, printed, code);
      if (!/\/cancel\b/.test(line)) expect(code, `"${line}" exited ${code}:\n${printed}`).toBe(0);
      if (line.startsWith('curl -s') && !/\/cancel\b/.test(line)) expect(printed, line).not.toMatch(/^\{"error"/);
    }
  }

  it('Quick start, stored workflows, the command line, watching runs, agents, slow services, chat, any language: no collisions', async () => {
    // every section with shell lines is followed below, or skipped here with its reason
    const followed = [
      'Quick start',
      'Stored workflows',
      'The command line',
      'Watching runs',
      'The agent run ledger',
      'Orchestrating',
      'Chat channels',
      'From any language',
    ];
    // In your project: a tarball installed into an empty project from `git clone <this repository>` (a placeholder);
    // e2e/install.int.test.ts does exactly that, on both backends
    // Develop: `runledger dev` in a project of its own, driven through edit → reload in tmux by e2e/dev.int.test.ts
    const skipped = ['In your project', 'Develop'];
    const withShell = [...readme.matchAll(/\n## ([^\n]+)/g)]
      .map((m) => m[1]!)
      .filter((h) => sectionBlocks(readme, h).length > 0);
    for (const heading of withShell)
      expect(
        [...followed, ...skipped].some((h) => heading.startsWith(h)),
        `the walk does not know the README section "${heading}"`,
      ).toBe(true);

    // Quick start: `npm ci` is the clone above; `npm test` is the whole suite, which CI runs on its own
    const quick = commands('Quick start');
    expect(quick[0]).toBe('npm ci && npm start');
    let server = t.launch('one', 'npm start');
    await poll(
      'npm start serving',
      () => /serving http:\/\/127\.0\.0\.1:8080 on runledger\.db/.test(t.since('one', server)),
      60_000,
      () => t.screen('one'),
    );
    const ui = await fetch('http://127.0.0.1:8080/ui');
    expect(ui.status).toBe(200);
    expect(await ui.text()).toMatch(/<html/i);
    expect((await fetch('http://127.0.0.1:8080/runs/run_sample-order')).status).toBe(200); // the sample's run, shown first
    const stored = await stopIfTold('Stored workflows', "Stop the Quick start's server first (Ctrl-C)", 'one', server);

    // Stored workflows over HTTP: the echo target and an allowed server in the background, then the curl lines
    await follow(stored, commands('Stored workflows'), async (line, printed) => {
      if (line.includes('listen(9000)')) await waitPort(9000, true);
      if (line.includes('npm start &')) await waitPort(8080, true, 60_000);
      if (line.includes('/workflows -H')) take('wf', printed, /"id":"(wf_\w+)"/);
      if (line.includes('/execute')) {
        expect(printed).toMatch(/"status":"pending"[^}]*"duplicate":false/);
        take('ex', printed, /"execution_id":"(ex_\w+)"/);
        // "again → 200 … success, duplicate": the echo target answered a step of THIS server (one without
        // RUNLEDGER_HTTP_ALLOW would have failed it)
        for (let i = 0; ; i++) {
          const repeated = await t.run(stored, line);
          if (/"status":"success"[^}]*"duplicate":true/.test(repeated.printed)) break;
          expect(repeated.printed).not.toMatch(/"status":"failed"/);
          if (i > 30) throw new Error(`the execution did not succeed:\n${repeated.printed}`);
          await new Promise((r) => setTimeout(r, 500));
        }
      }
      if (/executions\/ex_\w+$/.test(line)) expect(printed).toMatch(/"status":"success"/);
      if (line.startsWith('kill %1 %2')) for (const port of [8080, 9000]) await waitPort(port, false);
    });

    // The command line: terminal 1 serves on 8081, terminal 2 is the CLI
    const [serve, ...walk] = commands('The command line');
    expect(serve).toMatch(/^npx runledger serve --port 8081$/);
    let serverWindow = stored;
    server = t.launch(serverWindow, serve!);
    await poll(
      'serve --port 8081',
      () => /serving http:\/\/127\.0\.0\.1:8081/.test(t.since(serverWindow, server)),
      60_000,
      () => t.screen(serverWindow),
    );
    const watch = walk.pop()!;
    expect(watch).toMatch(/channel watch general$/);
    await follow('two', walk, (line, printed) => {
      if (line.includes('workflows apply')) take('wf', printed, /(?:created|unchanged) (wf_\w+) 'hello'/);
      if (line.includes('runledger start ')) {
        expect(printed).toMatch(/execution ex_\w+ success/);
        take('ex', printed, /execution (ex_\w+)/);
      }
      if (line.includes('runs list')) expect(printed).toMatch(/ex_\w+\s+success\s+\S+\s+hello/);
    });
    const watching = t.launch('two', watch);
    // it prints nothing until a message comes (the tmux test posts one); a second to connect
    await new Promise((r) => setTimeout(r, 1_500));
    // npx dies of the SIGINT (130; node alone exits 0, as tmux.int.test.ts sees): what counts is no error on the way out
    expect((await t.interrupt('two', watching)).printed).not.toMatch(/Error|disconnected/);
    serverWindow = await stopIfTold(
      'Watching runs',
      'stop the `serve --port 8081` above first: Ctrl-C',
      serverWindow,
      server,
    );

    // Watching runs, with `npm start` running in terminal 1
    server = t.launch(serverWindow, 'npm start');
    await poll(
      'npm start again',
      () => /serving http:\/\/127\.0\.0\.1:8080/.test(t.since(serverWindow, server)),
      60_000,
      () => t.screen(serverWindow),
    );
    take('wf', t.since(serverWindow, server), /sample workflow (wf_\w+) 'greet-and-log'/); // "the sample greet-and-log's id, which npm start prints"
    const stream = (line: string) => line.startsWith('curl -N');
    const watchingRuns = commands('Watching runs');
    for (const part of [
      watchingRuns.slice(0, watchingRuns.findIndex(stream)),
      watchingRuns.slice(watchingRuns.findIndex(stream) + 1),
    ]) {
      await follow('two', part, (line, printed) => {
        if (line.includes('runledger trigger')) {
          expect(printed).toMatch(/session evt_\w+ started/);
          take('evt', printed, /event (evt_\w+) stored/);
        }
        if (line.includes('/rules')) take('rule', printed, /"id":"(rule_\w+)"/);
        // nothing has failed so far: no server with other settings took a step
        if (line.includes('status=failed')) expect(printed).toMatch(/"runs":\[\]/);
        if (line.includes('types=step.completed')) expect(printed).toMatch(/step\.completed/);
        if (line.includes('/wait?')) expect(printed).toMatch(/"status":"success"/);
      });
      if (part[0] === watchingRuns[0]) {
        // the live stream ends at Ctrl-C
        const live = t.launch('two', fill(watchingRuns.find(stream)!));
        await poll(
          'the SSE stream',
          () => /run\.completed/.test(t.since('two', live)),
          20_000,
          () => t.screen('two'),
        );
        await t.interrupt('two', live);
      }
    }

    // The agent run ledger: the approval is pending once the run reaches issue_refund; `agent show` at the end says success
    let shows = 0;
    await follow('two', commands('The agent run ledger'), async (line, printed) => {
      if (line.includes('/agent/events -H')) {
        take('evt', printed, /"event_id":"(evt_\w+)"/);
        take('ses', printed, /"run_id":"(ses_\w+)"/);
      }
      if (line.endsWith('agent approvals')) {
        let shown = printed;
        for (let i = 0; !/tc_\w+/.test(shown); i++) {
          if (i > 30) throw new Error(`no approval pending:\n${shown}`);
          await new Promise((r) => setTimeout(r, 500));
          shown = (await t.run('two', line)).printed;
        }
        take('tc', shown, /(tc_\w+)/);
      }
      if (line.includes('agent show') && ++shows === 2) {
        let shown = printed;
        for (let i = 0; !/success/.test(shown); i++) {
          if (i > 30) throw new Error(`the agent run did not succeed:\n${shown}`);
          await new Promise((r) => setTimeout(r, 500));
          shown = (await t.run('two', line)).printed;
        }
      }
    });

    // Orchestrating slow services: "stop the servers above first (Ctrl-C)", then both in the background of terminal 2
    const watcher = await stopIfTold('Orchestrating', 'stop the servers above first (Ctrl-C)', serverWindow, server);
    await follow('two', commands('Orchestrating'), async (line, printed) => {
      if (line.includes('mock-services')) await waitPort(9090, true);
      if (line.includes('npm start &')) await waitPort(8080, true, 60_000);
      if (line.includes('runledger start ')) {
        expect(printed).toMatch(/execution ex_\w+ success DELIVERED/);
        take('ex', printed, /execution (ex_\w+)/);
      }
    });

    // Chat channels: terminal 1 watches, terminal 2 posts
    const [chatWatch, ...chat] = commands('Chat channels');
    expect(chatWatch).toMatch(/channel watch general$/);
    const chatting = t.launch(watcher, chatWatch!);
    await new Promise((r) => setTimeout(r, 1_500));
    await follow('two', chat, (line, printed) => {
      if (line.includes('"event_id":"m-1"')) expect(printed).toMatch(/"seq":\d+/);
      if (line.includes('limit=50')) expect(printed).toMatch(/is the build green\?[\s\S]*and the deploy\?/);
    });
    await poll(
      'the watcher shows both',
      () => /is the build green\?[\s\S]*and the deploy\?/.test(t.since(watcher, chatting)),
      20_000,
      () => t.screen(watcher),
    );
    expect((await t.interrupt(watcher, chatting)).printed).not.toMatch(/Error|disconnected/);

    // From any language: a task worker in curl, against the same server
    await follow('two', commands('From any language'), (line, printed) => {
      if (line.includes('/complete')) expect(printed).toMatch(/complete/);
    });

    for (const window of t.names())
      expect(t.screen(window), `terminal ${window}`).not.toMatch(/EADDRINUSE|is in use on|warning: process \S+ has/);
    // the README leaves the last servers running in terminal 2's background: stop them as a person would
    expect((await t.run('two', 'kill %1 %2')).code).toBe(0);
    for (const port of [8080, 9090]) await waitPort(port, false);
  }, 420_000);
});
