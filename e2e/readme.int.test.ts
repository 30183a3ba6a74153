import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Runs `source` (a README example with its imports pointed at src/) in a fresh Node process in `dir`; returns its stdout. */
async function runExample(source: string, dir: string): Promise<string> {
  const file = join(dir, `example-${Math.random().toString(36).slice(2)}.mts`);
  writeFileSync(
    file,
    source
      .replace("from 'runledger'", `from '${resolve('src/index.ts')}'`)
      .replace("'runledger.db'", `'${join(dir, 'example.db')}'`),
  );
  const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { timeout: 20_000 });
  return stdout;
}

const readme = readFileSync('README.md', 'utf8');
const block = (heading: string) => new RegExp(`## ${heading}\\s+\`\`\`ts\\n([\\s\\S]*?)\`\`\``).exec(readme)?.[1];

describe('README', () => {
  it('shows the example files as they are (examples.int.test.ts runs them)', () => {
    expect(block('Example')).toBe(readFileSync('examples/quick-start.ts', 'utf8'));
    expect(block('A durable workflow')).toBe(readFileSync('examples/durable-workflow.ts', 'utf8'));
  });

  it('its example runs as written, and again: the idempotency key does its job', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runledger-readme-'));
    expect(await runExample(block('Example')!, dir)).toBe('order-1 placed\nemail task: { sent: true }\n');
    expect(await runExample(block('Example')!, dir)).toBe(
      'order-1 was placed before: nothing written\nemail task: { sent: true }\n',
    );
  });

  it('its workflow example runs as written, and again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runledger-readme-'));
    for (let i = 0; i < 2; i++)
      expect((await runExample(block('A durable workflow')!, dir)).trim()).toBe(
        "{ account: 'acct-ada', approved: true }",
      );
  });
});
