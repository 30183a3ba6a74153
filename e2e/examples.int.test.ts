import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

// `import … from 'runledger'` in an example is the package itself (its `exports`, so dist/: build first)
const tsx = pathToFileURL(
  createRequire(import.meta.url)
    .resolve('tsx')
    .replace(/cjs[/\\]index\.cjs$/, 'esm/index.mjs'),
).href;
const RUNNERS: Record<string, (file: string) => string[]> = {
  '.ts': (file) => [process.execPath, '--import', tsx, file],
  '.mts': (file) => [process.execPath, '--import', tsx, file],
  '.mjs': (file) => [process.execPath, file],
  '.js': (file) => [process.execPath, file],
  '.sh': (file) => ['bash', file],
};

/** What an example prints, where it says more than "it ran": the second run shows the idempotency doing its job. */
const EXPECTED: Record<string, [RegExp, RegExp]> = {
  'quick-start.ts': [
    /order-1 placed\nemail task: \{ sent: true \}/,
    /order-1 was placed before: nothing written\nemail task: \{ sent: true \}/,
  ],
  'durable-workflow.ts': [/\{ account: 'acct-ada', approved: true \}/, /\{ account: 'acct-ada', approved: true \}/],
  'start-without-workers.ts': [
    /started invoice-o-7 pending\n\{ id: 'INV-o-7', total: 42 \}/,
    /started invoice-o-7 success/,
  ],
  'order-payment.ts': [
    /\{ order: '42', status: 'shipped', charged: 30, shipment: 'ship-42' \}[\s\S]*order 43: CancelledError/,
    /\{ order: '42', status: 'shipped', charged: 30, shipment: 'ship-42' \}[\s\S]*order 43: CancelledError/,
  ],
  'stored-workflow.ts': [
    /success \{ greeting: 'Hello ADA!', items: \[ 'latte', 'latte' \] \}/,
    /success \{ greeting: 'Hello ADA!'/,
  ],
};

function run(command: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    execFile(
      command[0]!,
      command.slice(1),
      { cwd, encoding: 'utf8', timeout: 60_000, env: { ...process.env, RUNLEDGER_DATABASE: '', DATABASE_URL: '' } },
      (error, stdout, stderr) =>
        done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    );
  });
}

// folders hold examples in other languages that need a server: e2e/python.int.test.ts runs examples/python/ against one
const files = readdirSync('examples', { withFileTypes: true })
  .filter((f) => f.isFile() && !f.name.startsWith('.') && !f.name.endsWith('.md') && !f.name.endsWith('.json'))
  .map((f) => f.name)
  .sort();

describe('examples/', () => {
  it('holds runnable files, each of a kind this test can run', () => {
    expect(files.length).toBeGreaterThanOrEqual(4);
    for (const file of files) expect(Object.keys(RUNNERS), file).toContain(extname(file));
  });

  it.each(files)('%s runs, and runs again, from a fresh folder', async (file) => {
    const cwd = mkdtempSync(join(tmpdir(), 'runledger-example-'));
    const command = RUNNERS[extname(file)]!(resolve('examples', file));
    const first = await run(command, cwd);
    expect(first.code, first.output).toBe(0);
    const second = await run(command, cwd);
    expect(second.code, second.output).toBe(0);
    const expected = EXPECTED[file];
    if (expected) {
      expect(first.output).toMatch(expected[0]);
      expect(second.output).toMatch(expected[1]);
    }
  });
});
