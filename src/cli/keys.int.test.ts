import { describe, expect, it } from 'vitest';
import { useServer } from '../server/test-server.js';
import { backends } from '../testing/backends.js';
import { main } from './main.js';
import { output } from './output.js';

describe.each(backends)('runledger keys create / list / rotate / revoke on $name', (backend) => {
  const served = useServer(backend, { token: 'boot' });

  const run = async (token: string, ...args: string[]) => {
    let printed = '';
    await main(
      ['node', 'runledger', 'keys', ...args, '--url', served.server.url, '--token', token],
      output((t) => (printed += t), false),
    );
    return printed;
  };

  it('creates a key and prints its secret once, lists prefixes, rotates and revokes by name', async () => {
    const created = await run('boot', 'create', 'ops', '--role', 'operator', 'approver', '--issued-to', 'ana');
    const secret = created.split('\n')[1]!;
    expect(created).toMatch(/^ops \(key_\w+\): operator, approver\nrl_[\w-]{43}\nthis secret is shown once/);
    const listed = await run('boot', 'list');
    expect(listed).toMatch(/ops\s+ana\s+rl_\S{5}\s+operator,approver\s+default\s+-\s+-/);
    expect(listed).not.toContain(secret);
    // the key itself works, and cannot manage keys
    await expect(run(secret, 'list')).rejects.toThrow(/needs the role 'admin'/);
    const rotated = (await run('boot', 'rotate', 'ops')).split('\n')[1]!;
    expect(rotated).not.toBe(secret);
    await expect(run(secret, 'list')).rejects.toThrow(/unknown or revoked/);
    expect(await run('boot', 'revoke', 'ops')).toMatch(/^revoked ops \(key_\w+\)\n$/);
    expect(JSON.parse(await run('boot', 'list', '--json'))[0].revoked_at).not.toBeNull();
  });

  it('names the field of bad input', async () => {
    await expect(run('boot', 'create', 'x', '--role', 'root')).rejects.toThrow(/roles\[0\]/);
    await expect(run('boot', 'revoke', 'nobody')).rejects.toThrow("no key named 'nobody'");
  });
});
