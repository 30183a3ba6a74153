import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Runs `source` (a README example with its imports pointed at src/) in a fresh Node process; returns its stdout. */
async function runExample(source: string, dir: string): Promise<string> {
  const file = join(dir, `example-${Math.random().toString(36).slice(2)}.mts`);
  writeFileSync(file, source.replace("from 'runledger'", `from '${resolve('src/index.ts')}'`).replace("'runledger.db'", `'${join(dir, 'example.db')}'`));
  const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { timeout: 20_000 });
  return stdout;
}

describe('README', () => {
  it('its example runs as written', async () => {
    const readme = readFileSync('README.md', 'utf8');
    const example = /## Example\s+```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(example).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), 'runledger-readme-'));
    const check = `
const deadline = Date.now() + 10_000;
while ((await engine.queue.list({ queue: 'email' }))[0]?.state !== 'completed' || !(await engine.store.projectionGet({ name: 'invoice', key: 'order-1' }))) {
  if (Date.now() > deadline) throw new Error('the example did not finish');
  await new Promise((r) => setTimeout(r, 20));
}
console.log(JSON.stringify({ task: (await engine.queue.list({ queue: 'email' }))[0]?.result, invoice: await engine.store.projectionGet({ name: 'invoice', key: 'order-1' }) }));
await engine.close();
`;
    const stdout = await runExample(example! + check, dir);
    expect(JSON.parse(stdout.trim())).toEqual({ task: { sent: true }, invoice: { total: 42 } });
  });

  it('its workflow example runs as written', async () => {
    const example = /## A durable workflow\s+```ts\n([\s\S]*?)```/.exec(readFileSync('README.md', 'utf8'))?.[1];
    expect(example).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), 'runledger-readme-'));
    const stdout = await runExample(`${example!}await engine.close();\n`, dir);
    expect(stdout.trim()).toBe("{ account: 'acct-ada', approved: true }");
  });
});
