import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '../src/testing/engine.js';
import { launchBrowser } from './browser.js';
import { freePort } from './child.js';

/**
 * `runledger dev` in a real terminal: tmux runs it, the test edits the module the way an editor
 * saves (a new file renamed over the old one) and reads the screen. Its own tmux server (`-L`),
 * killed at the end.
 */
const socket = `runledger-dev-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
const screen = () => tmux('capture-pane', '-p', '-J', '-S', '-500', '-t', 'dev:0');

/** The module: a run waits for the event `go`, then says which code it ran on. */
const flows = (tag: string, broken = '') => `import { workflow } from '${resolve('dist/index.js')}';
export const greet = workflow('greet', async (ctx, input: { name: string }) => {
  const go = await ctx.waitForEvent<number>('go', { timeout: '1h' });
  return \`${tag} \${input.name} \${go}\`;
});
${broken}`;

/**
 * The agents module: agent `greeter` writes its reply to `reply-<session>.txt`, after `go-<session>` exists when its
 * input says `wait`, so a session can be held mid-turn across a reload.
 */
const agents = (tag: string, broken = '') => `import { existsSync, writeFileSync } from 'node:fs';
import { defineAgent } from '${resolve('dist/index.js')}';
export const greeter = defineAgent('greeter', async (input: { name: string; wait?: boolean }, ctx) => {
  while (input.wait && !existsSync(\`go-\${ctx.sessionId}\`)) await new Promise((r) => setTimeout(r, 50));
  writeFileSync(\`reply-\${ctx.sessionId}.txt\`, \`${tag} \${input.name}\`);
});
${broken}`;

function save(file: string, text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

async function seen(pattern: RegExp): Promise<RegExpExecArray> {
  return eventually(() => pattern.exec(screen()) ?? undefined, 20_000).catch((error) => {
    throw new Error(`${error.message}; the terminal:\n${screen()}`);
  });
}

describe('runledger dev in a real terminal (tmux)', () => {
  afterAll(() => {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
  });

  it('edit → reload: a new run takes the new code, a run in flight ends on its own; a broken module keeps the last good one serving, shown on the dashboard', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runledger-dev-'));
    const file = join(dir, 'flows.ts');
    save(file, flows('v1'));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env = ['env', 'RUNLEDGER_URL=', 'RUNLEDGER_DATABASE=', 'DATABASE_URL=', 'RUNLEDGER_LOG_LEVEL=warn'];
    tmux('new-session', '-d', '-s', 'dev', '-x', '200', '-y', '50', '-c', dir, ...env, 'bash', '--norc', '--noprofile');
    const command = `node ${resolve('bin/runledger.js')} dev --workflows ./flows.ts --port ${port} --mock-services 0`;
    tmux('send-keys', '-t', 'dev:0', '-l', `${command}; echo "__dev_exit=$?"`);
    tmux('send-keys', '-t', 'dev:0', 'Enter');
    await seen(new RegExp(`dashboard: ${url}/ui`));
    expect(screen()).toMatch(/workflows: greet@\w+ \(--workflows \.\/flows\.ts\)/);
    expect(existsSync(join(dir, '.runledger', 'dev.db'))).toBe(true);
    const mock = /mock services: (http:\/\/127\.0\.0\.1:\d+)/.exec(screen())?.[1];
    expect((await fetch(`${mock}/`)).status).toBe(200);

    const api = async (path: string, body?: unknown) => {
      const response = await fetch(`${url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(response.ok, await response.clone().text()).toBe(true);
      return response.json();
    };
    const start = async (name: string): Promise<string> => {
      const { run_id } = await api('/runs', { workflow: 'greet', input: { name } });
      await eventually(async () => (await api(`/runs/${run_id}`)).status === 'waiting');
      return run_id;
    };

    const old = await start('old');
    save(file, flows('v2'));
    await seen(/reloaded --workflows \.\/flows\.ts: greet@\w+ \(new runs\)/);
    const next = await start('new');

    save(file, flows('v3', 'export const broken = (;'));
    await seen(/✗ --workflows \.\/flows\.ts: SyntaxError at flows\.ts:6:\d+: Unexpected ";"/);
    expect(screen()).toContain('the previous version keeps serving');
    const during = await start('during');
    const [status] = (await api('/dev/status')).modules;
    expect(status).toMatchObject({
      flag: '--workflows',
      path: './flows.ts',
      serving: [expect.stringMatching(/^greet@/)],
    });
    expect(status.error).toMatch(/SyntaxError at flows\.ts:6:\d+: Unexpected ";"/);
    // the dashboard shows it, and stops showing it once a save loads
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(`${url}/ui/runs`);
      const banner = page.locator('[role="alert"]', { hasText: '--workflows ./flows.ts did not load' });
      await banner.waitFor({ timeout: 20_000 });
      expect(await banner.textContent()).toContain('Unexpected ";"');
      save(file, flows('v2'));
      await seen(/reloaded --workflows \.\/flows\.ts: greet unchanged/);
      await banner.waitFor({ state: 'detached', timeout: 20_000 });
    } finally {
      await browser.close();
    }

    for (const [id, go] of [
      [old, 1],
      [next, 2],
      [during, 3],
    ] as const)
      await api(`/runs/${id}/signal`, { name: 'go', payload: go });
    const ended = async (id: string) =>
      eventually(async () => {
        const run = await api(`/runs/${id}`);
        return run.status === 'success' ? run : undefined;
      });
    const [a, b, c] = [await ended(old), await ended(next), await ended(during)];
    expect([a.output, b.output, c.output]).toEqual(['v1 old 1', 'v2 new 2', 'v2 during 3']);
    expect(a.version).not.toBe(b.version);
    expect(c.version).toBe(b.version);

    tmux('send-keys', '-t', 'dev:0', 'C-c');
    await seen(/runledger dev \d+: stopped\n__dev_exit=0/);
  }, 60_000);

  it('edit an agent → reload: the next session takes the new reply, one mid-turn ends on its own; a broken agents module keeps the last good one serving, shown on the dashboard', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runledger-dev-agents-'));
    const file = join(dir, 'agents.ts');
    save(file, agents('v1'));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env = ['env', 'RUNLEDGER_URL=', 'RUNLEDGER_DATABASE=', 'DATABASE_URL=', 'RUNLEDGER_LOG_LEVEL=warn'];
    tmux(
      'new-session',
      '-d',
      '-s',
      'agents',
      '-x',
      '200',
      '-y',
      '50',
      '-c',
      dir,
      ...env,
      'bash',
      '--norc',
      '--noprofile',
    );
    const pane = () => tmux('capture-pane', '-p', '-J', '-S', '-500', '-t', 'agents:0');
    const shown = (pattern: RegExp) =>
      eventually(() => pattern.exec(pane()) ?? undefined, 20_000).catch((error) => {
        throw new Error(`${error.message}; the terminal:\n${pane()}`);
      });
    const command = `node ${resolve('bin/runledger.js')} dev --agents ./agents.ts --port ${port}`;
    tmux('send-keys', '-t', 'agents:0', '-l', `${command}; echo "__dev_exit=$?"`);
    tmux('send-keys', '-t', 'agents:0', 'Enter');
    await shown(new RegExp(`dashboard: ${url}/ui`));
    expect(pane()).toMatch(/agents: greeter \(runledger\.session@1\)/);

    const api = async (path: string, body?: unknown) => {
      const response = await fetch(`${url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(response.ok, await response.clone().text()).toBe(true);
      return response.json();
    };
    const session = async (name: string, wait = false): Promise<string> =>
      (await api('/sessions', { agent: 'greeter', input: { name, wait } })).session_id;
    const reply = (id: string) =>
      eventually(
        () =>
          existsSync(join(dir, `reply-${id}.txt`)) ? readFileSync(join(dir, `reply-${id}.txt`), 'utf8') : undefined,
        20_000,
      );

    expect(await reply(await session('first'))).toBe('v1 first');
    const held = await session('held', true);
    await eventually(async () => (await api(`/runs/${held}`)).status === 'running');
    save(file, agents('v2'));
    await shown(/reloaded --agents \.\/agents\.ts: greeter, sample-agent on runledger\.session@1\.1 \(new sessions\)/);
    expect(await reply(await session('next'))).toBe('v2 next');

    save(file, agents('v3', 'export const broken = (;'));
    await shown(/✗ --agents \.\/agents\.ts: SyntaxError at agents\.ts:7:\d+: Unexpected ";"/);
    expect(pane()).toContain('the previous agents keep serving');
    expect(await reply(await session('during'))).toBe('v2 during');
    const [status] = (await api('/dev/status')).modules;
    expect(status).toMatchObject({
      flag: '--agents',
      path: './agents.ts',
      serving: expect.arrayContaining([expect.stringMatching(/^greeter \(runledger\.session@1\.1\)/)]),
    });
    expect(status.error).toMatch(/SyntaxError at agents\.ts:7:\d+: Unexpected ";"/);
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(`${url}/ui/runs`);
      const banner = page.locator('[role="alert"]', { hasText: '--agents ./agents.ts did not load' });
      await banner.waitFor({ timeout: 20_000 });
      expect(await banner.textContent()).toContain('Unexpected ";"');
      save(file, agents('v2'));
      await shown(/reloaded --agents \.\/agents\.ts: greeter, sample-agent on runledger\.session@1\.2 /);
      await banner.waitFor({ state: 'detached', timeout: 20_000 });
    } finally {
      await browser.close();
    }

    // the session held mid-turn across the reloads ends on the code it started on
    writeFileSync(join(dir, `go-${held}`), '');
    expect(await reply(held)).toBe('v1 held');
    tmux('send-keys', '-t', 'agents:0', 'C-c');
    await shown(/runledger dev \d+: stopped\n__dev_exit=0/);
  }, 90_000);
});
