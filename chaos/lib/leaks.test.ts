import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { countLeaks } from './leaks.js';

const secret = 'chaos "sécret" 0a1b2c3d4e5f';

describe('the leaked figure', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('finds a secret in every encoded form in logs, database files and responses, and nothing in masked text', () => {
    const dir = mkdtempSync(join(tmpdir(), 'chaos-leaks-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'serve.log'), `{"msg":"${secret.toUpperCase()}"} GET /x?q=${encodeURIComponent(secret)}\n`);
    writeFileSync(
      join(dir, 'app.db-wal'),
      Buffer.concat([Buffer.from([0, 1, 2]), Buffer.from(`Basic ${Buffer.from(`user:${secret}`).toString('base64')}`)]),
    );
    writeFileSync(join(dir, 'worker.log'), 'Authorization: Bearer ***\n');
    const found = countLeaks(secret, { dir, databases: [], texts: [JSON.stringify({ echoed: secret })] });
    expect(found.count).toBe(4);
    expect(found.places.map((p) => p.split(' ')[0]).sort()).toEqual([
      'app.db-wal',
      'response',
      'serve.log',
      'serve.log',
    ]);
    expect(found.places.join('\n')).not.toContain('sécret');
  });
});
