import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '../src/testing/engine.js';
import { freePort } from './child.js';

/**
 * The README's command-line walk, typed into real terminals: tmux runs a shell per terminal, the
 * test sends each README line as keys (Ctrl-C included) and reads the screen. Its own tmux server
 * (`-L`), killed at the end.
 */
const socket = `runledger-e2e-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
const WINDOWS: Record<string, number> = { server: 0, cli: 1 };
const target = (window: string) => `walk:${WINDOWS[window]}`;
const screen = (window: string) => tmux('capture-pane', '-p', '-J', '-S', '-500', '-t', target(window));
const type = (window: string, line: string) => tmux('send-keys', '-t', target(window), '-l', line);
const enter = (window: string) => tmux('send-keys', '-t', target(window), 'Enter');

/** The README's lines of the command-line walk, comments cut off. */
function readmeWalk(): string[] {
  const section = /## The command line[\s\S]*?```sh\n([\s\S]*?)```/.exec(readFileSync('README.md', 'utf8'))?.[1];
  if (!section) throw new Error('README has no "The command line" walk');
  return section
    .split('\n')
    .map((line) => line.replace(/\s+#\s.*$/, '').trim())
    .filter(Boolean);
}

let marker = 0;
/** Types `line` in `window`, then prints its exit code; resolves with what it printed and that code. */
async function command(window: string, line: string, timeoutMs = 20_000): Promise<{ printed: string; code: number }> {
  const tag = `__done_${++marker}__`;
  type(window, `${line}; echo "${tag}=$?"`);
  enter(window);
  const done = new RegExp(`^${tag}=(\\d+)$`, 'm');
  const text = await eventually(() => {
    const now = screen(window);
    return done.test(now) ? now : undefined;
  }, timeoutMs);
  const printed = text
    .slice(text.lastIndexOf(`echo "${tag}`))
    .split('\n')
    .slice(1)
    .join('\n');
  return { printed: printed.replace(done, '').trim(), code: Number(done.exec(text)![1]) };
}

describe('the README command-line walk in real terminals (tmux)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'runledger-tmux-'));
  afterAll(() => {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
  });

  it('serve, apply, run --wait, events --follow, runs list, channel watch with Ctrl-C; then Ctrl-C stops the server', async () => {
    const port = String(await freePort());
    const bin = `node ${resolve('bin/runledger.js')}`;
    const lines = readmeWalk().map((l) => l.replaceAll('npx runledger', bin).replaceAll('8081', port));
    const [serveLine, exportLine, ...rest] = lines;
    expect(serveLine).toMatch(/ serve --port \d+$/);
    expect(exportLine).toMatch(/^export RUNLEDGER_URL=/);

    tmux(
      'new-session',
      '-d',
      '-s',
      'walk',
      '-n',
      'server',
      '-x',
      '220',
      '-y',
      '50',
      '-c',
      dir,
      'env',
      'RUNLEDGER_URL=',
      'RUNLEDGER_DATABASE=',
      'DATABASE_URL=',
      'bash',
      '--norc',
      '--noprofile',
    );
    // windows by index: tmux renames a window after the command running in it
    tmux(
      'new-window',
      '-t',
      'walk',
      '-n',
      'cli',
      '-c',
      dir,
      'env',
      'RUNLEDGER_URL=',
      'RUNLEDGER_DATABASE=',
      'DATABASE_URL=',
      'bash',
      '--norc',
      '--noprofile',
    );
    type('server', `${serveLine}; echo "__server_exit=$?"`);
    enter('server');
    await eventually(
      () => new RegExp(`serving http://127\\.0\\.0\\.1:${port} on .*runledger\\.db`).test(screen('server')),
      20_000,
    ).catch((error) => {
      throw new Error(`${error.message}; the server's terminal:\n${screen('server')}`);
    });

    expect((await command('cli', exportLine!)).code).toBe(0);
    const ids: Record<string, string> = {};
    const fill = (line: string) =>
      line.replace('wf_01…', ids.workflow ?? 'wf_01…').replace('ex_01…', ids.execution ?? 'ex_01…');
    const watchLine = rest.find((l) => l.includes('channel watch'))!;
    for (const line of rest.filter((l) => l !== watchLine)) {
      const { printed, code } = await command('cli', fill(line));
      if (line.startsWith('echo ')) {
        expect(code).toBe(0);
      } else if (line.includes('workflows apply')) {
        expect(code, printed).toBe(0);
        expect(printed).toMatch(/^created wf_\w+ 'hello' version 1 \(1 step\)/);
        ids.workflow = /created (wf_\w+)/.exec(printed)![1]!;
        const again = await command('cli', fill(line));
        expect(again.printed).toMatch(/^unchanged wf_\w+ 'hello' version 1 \(1 step\)/);
      } else if (line.includes(' start ')) {
        expect(code, printed).toBe(0);
        expect(printed).toMatch(
          /execution ex_\w+ pending\n {2}greet: success \d+ ms\nexecution ex_\w+ success in \d+ ms\n {2}greet {2}ok {2}\d+ ms\noutput: \{"greet":\{"greeting":"Hello ADA!"\}\}/,
        );
        ids.execution = /execution (ex_\w+)/.exec(printed)![1]!;
      } else if (line.includes('events')) {
        expect(code, printed).toBe(0);
        expect(printed).toMatch(
          /run\.started\s+runledger\.stored wf_\w+ v1\n.*step\.started\s+greet \(attempt 1\)\n.*step\.completed\s+greet → \{"greeting":"Hello ADA!"\}\n.*run\.completed/,
        );
        expect(printed).toMatch(/run ex_\w+ success → /);
      } else if (line.includes('runs list')) {
        expect(code, printed).toBe(0);
        expect(printed).toMatch(/^ID\s+STATUS\s+CREATED\s+WORKFLOW\s+ERROR\nex_\w+\s+success\s+\S+\s+hello$/m);
      } else {
        throw new Error(`the walk has a line this test does not know: ${line}`);
      }
    }
    // a failed run: events --follow exits 1
    const failing = await command(
      'cli',
      `echo '{"name":"broken","steps":[{"id":"bad","type":"log","config":{"message":"{{trigger.missing}}"}}]}' > broken.json && ${bin} workflows apply broken.json`,
    );
    const broken = /created (wf_\w+)/.exec(failing.printed)![1]!;
    const ran = await command('cli', `${bin} run ${broken} --wait`);
    expect(ran.code).toBe(1);
    const failedId = /execution (ex_\w+)/.exec(ran.printed)![1]!;
    expect((await command('cli', `${bin} events ${failedId} --follow`)).code).toBe(1);

    // channel watch until Ctrl-C, printing a message posted meanwhile
    type('cli', `${watchLine}; echo "__watch_exit=$?"`);
    enter('cli');
    await new Promise((r) => setTimeout(r, 1_000));
    execFileSync(process.execPath, [
      'bin/runledger.js',
      'channel',
      'post',
      'general',
      'hello from the walk',
      '--url',
      `http://127.0.0.1:${port}`,
    ]);
    await eventually(() => /#1\s+user\s+cli: hello from the walk/.test(screen('cli')), 10_000);
    tmux('send-keys', '-t', target('cli'), 'C-c');
    await eventually(() => /__watch_exit=0/.test(screen('cli')), 10_000);
    const watched = screen('cli').slice(screen('cli').lastIndexOf('channel watch general'));
    expect(watched).not.toMatch(/MaxListenersExceeded|Error|disconnected/);

    tmux('send-keys', '-t', target('server'), 'C-c');
    await eventually(() => /__server_exit=0/.test(screen('server')), 20_000);
    expect(screen('server')).toMatch(/runledger \d+: stopped/);
  }, 120_000);
});
