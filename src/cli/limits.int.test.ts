import { describe, expect, it } from 'vitest';
import { useServer } from '../server/test-server.js';
import { backends } from '../testing/backends.js';
import { main } from './main.js';
import { output } from './output.js';

describe.each(backends)('runledger limits set / list / show / delete on $name', (backend) => {
  const served = useServer(backend);

  const run = async (...args: string[]) => {
    let printed = '';
    await main(
      ['node', 'runledger', 'limits', ...args, '--url', served.server.url],
      output((t) => (printed += t), false),
    );
    return printed;
  };

  it('sets a limit, changes it, lists, shows and deletes it', async () => {
    expect(await run('set', 'openai', '--limit', '100', '--period', '1m')).toBe('openai: 100 per 1m\n');
    expect(await run('set', 'openai', '--limit', '5', '--period', '1s', '--key', 'input.user')).toBe(
      'openai: 5 per 1s, one bucket per input.user\n',
    );
    expect(await run('list')).toMatch(/NAME\s+LIMIT\s+PERIOD\s+KEY\s+UPDATED\nopenai\s+5\s+1s\s+input\.user\s+\d{4}-/);
    expect(JSON.parse(await run('show', 'openai', '--json'))).toMatchObject({
      name: 'openai',
      limit: 5,
      period_ms: 1000,
    });
    expect(await run('delete', 'openai')).toBe('deleted openai\n');
    expect(await run('list')).toContain('no rate limits');
  });

  it.each([
    [['--limit', '0', '--period', '1m'], 'limit'],
    [['--limit', '10', '--period', '100ms'], 'period'],
    [['--limit', '10', '--period', '1m', '--key', 'input..x'], 'key'],
  ])('refuses %j naming %s', async (flags, field) => {
    await expect(run('set', 'bad', ...flags)).rejects.toThrow(new RegExp(`${field}: `));
  });

  it('answers an unknown name with not found', async () => {
    await expect(run('show', 'missing')).rejects.toThrow("no rate limit named 'missing'");
  });
});
