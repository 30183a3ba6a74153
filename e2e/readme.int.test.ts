import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

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
    const source = example!.replace("from 'runledger'", `from '${resolve('src/index.ts')}'`).replace("'runledger.db'", `'${join(dir, 'example.db')}'`) + check;
    const file = join(dir, 'example.mts');
    writeFileSync(file, source);
    const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { timeout: 20_000 });
    expect(JSON.parse(stdout.trim())).toEqual({ task: { sent: true }, invoice: { total: 42 } });
  });
});
