import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';
import { loadSecretKey, Secrets } from './secrets.js';

const tempDir = (): string => mkdtempSync(join(tmpdir(), 'runledger-secrets-'));

describe.each(backends)('secrets on $name', (backend) => {
  let engine: Engine;
  let close: () => Promise<void>;
  let secrets: Secrets;
  const key = randomBytes(32);
  beforeEach(async () => {
    ({ engine, close } = await testEngine(backend));
    secrets = new Secrets(engine.store, engine.journal, key);
  });
  afterEach(() => close());

  it('stores, replaces and deletes secrets, journaling only their names', async () => {
    const first = await secrets.set('API_TOKEN', 'tok-one');
    await secrets.set('__proto__', 'odd but valid');
    expect(await secrets.values()).toEqual({ API_TOKEN: 'tok-one', ['__proto__']: 'odd but valid' });
    expect(Object.getPrototypeOf(await secrets.values())).toBe(Object.prototype);

    const replaced = await secrets.set('API_TOKEN', 'tok-two');
    expect(replaced.createdAt).toBe(first.createdAt);
    expect(replaced.updatedAt).toBeGreaterThanOrEqual(first.updatedAt);
    expect((await secrets.values()).API_TOKEN).toBe('tok-two');

    await secrets.delete('API_TOKEN');
    expect(Object.keys(await secrets.values())).toEqual(['__proto__']);
    await expect(secrets.delete('API_TOKEN')).rejects.toThrow(new NotFoundError('secret API_TOKEN not found'));

    const events = await engine.journal.readStream('secret:API_TOKEN');
    expect(events.map((e) => [e.type, e.data])).toEqual([
      ['secret.set', { name: 'API_TOKEN' }],
      ['secret.set', { name: 'API_TOKEN' }],
      ['secret.deleted', { name: 'API_TOKEN' }],
    ]);
  });

  it('lists names and times only, sorted by name, across pages', async () => {
    const names = Array.from({ length: 201 }, (_, i) => `${i % 2 === 0 ? 'k' : 'K'}_${String(i).padStart(3, '0')}`);
    for (const name of names) await secrets.set(name, `listed-value-${name}`);
    const listing = await secrets.list();
    expect(listing.map((s) => s.name)).toEqual([...names].sort());
    expect(Object.keys(listing[0]!).sort()).toEqual(['createdAt', 'name', 'updatedAt']);
    expect(JSON.stringify(listing)).not.toContain('listed-value');
    expect(Object.keys(await secrets.values())).toHaveLength(201);
  });

  it('never writes a value to the database in the clear', async () => {
    const planted = 's3cr3t-planted-7f9c';
    await secrets.set('PLANTED_NAME', planted);
    await secrets.set('OTHER', `${planted}-and-more`);
    await secrets.delete('OTHER');
    let raw: string;
    if (backend.name === 'sqlite') {
      const file = engine.config.database;
      raw = [file, `${file}-wal`]
        .filter((f) => existsSync(f))
        .map((f) => readFileSync(f).toString('latin1'))
        .join('');
    } else {
      const client = new pg.Client({ connectionString: engine.config.database });
      await client.connect();
      try {
        const events = await client.query<{ text: string | null }>(
          `SELECT string_agg(t::text, '') AS text FROM events t`,
        );
        const projections = await client.query<{ text: string | null }>(
          `SELECT string_agg(t::text, '') AS text FROM projections t`,
        );
        raw = `${events.rows[0]?.text ?? ''}${projections.rows[0]?.text ?? ''}`;
      } finally {
        await client.end();
      }
    }
    // the name is there: this is where the data lives, so the value's absence means something
    expect(raw).toContain('PLANTED_NAME');
    expect(raw).toContain('secret.deleted');
    expect(raw).not.toContain(planted);
    expect(raw).not.toContain(Buffer.from(planted).toString('base64'));
    expect(raw).not.toContain(Buffer.from(planted).toString('hex'));
    expect((await secrets.values()).PLANTED_NAME).toBe(planted);
  });

  it('fails to decrypt with another key, naming the secret and not the value', async () => {
    await secrets.set('DB_PASSWORD', 'hunter2-wrong-key');
    const other = new Secrets(engine.store, engine.journal, randomBytes(32));
    const error = await other.values().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/^secret DB_PASSWORD could not be decrypted: the key \(RUNLEDGER_SECRET_KEY/);
    expect(error?.message).not.toContain('hunter2');
    expect(await other.list()).toEqual(await secrets.list());
  });

  it('refuses a row moved to another name (the name is authenticated)', async () => {
    await secrets.set('ADMIN_TOKEN', 'admin-value');
    await secrets.set('GUEST_TOKEN', 'guest-value');
    const admin = await engine.store.projectionGet({ name: 'secret', key: 'ADMIN_TOKEN' });
    await engine.store.projectionPut({ name: 'secret', key: 'GUEST_TOKEN', value: admin });
    await expect(secrets.values()).rejects.toThrow(/^secret GUEST_TOKEN could not be decrypted/);
  });

  it('answers a bad name or value with a ValidationError naming the field, and writes nothing', async () => {
    for (const name of ['', '1ABC', 'has-dash', 'has space', 'x'.repeat(65), 'é']) {
      await expect(secrets.set(name, 'v')).rejects.toThrow(/^name: must be 1 to 64 letters, digits or underscores/);
    }
    await expect(secrets.set('A', '')).rejects.toThrow(new ValidationError('value', 'must be a non-empty string'));
    await expect(secrets.set('A', 123 as unknown as string)).rejects.toThrow(/^value: must be a non-empty string/);
    await expect(secrets.set('A', 'é'.repeat(32 * 1024 + 1))).rejects.toThrow(
      'value: is 64 KiB (65538 bytes), over the limit of 64 KiB (65536 bytes)',
    );
    await expect(secrets.delete('bad-name')).rejects.toThrow(/^name:/);
    expect(await secrets.set('x'.repeat(64), 'v'.repeat(64 * 1024))).toMatchObject({ name: 'x'.repeat(64) });
    expect((await secrets.list()).map((s) => s.name)).toEqual(['x'.repeat(64)]);
    expect((await engine.journal.readAll()).map((e) => e.streamId)).toEqual([`secret:${'x'.repeat(64)}`]);
  });
});

describe('Secrets', () => {
  it('refuses a key that is not 32 bytes', () => {
    expect(() => new Secrets({} as never, {} as never, randomBytes(16))).toThrow(
      new ValidationError('key', 'must be a Buffer of 32 bytes'),
    );
  });
});

describe('loadSecretKey', () => {
  it('creates <dataDir>/secret.key with mode 0600 on first use, and reads it after', async () => {
    const dataDir = join(tempDir(), 'not', 'yet');
    const key = await loadSecretKey({ dataDir });
    expect(key).toHaveLength(32);
    const path = join(dataDir, 'secret.key');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8').trim()).toBe(key.toString('hex'));
    expect(await loadSecretKey({ dataDir })).toEqual(key);
  });

  it('gives callers that start at once the same key', async () => {
    const dataDir = tempDir();
    const keys = await Promise.all(Array.from({ length: 8 }, () => loadSecretKey({ dataDir })));
    for (const key of keys) expect(key).toEqual(keys[0]);
    expect(readFileSync(join(dataDir, 'secret.key'), 'utf8').trim()).toBe(keys[0]!.toString('hex'));
  });

  it('waits for a key file another process has created but not yet written', async () => {
    const dataDir = tempDir();
    const path = join(dataDir, 'secret.key');
    writeFileSync(path, '', { mode: 0o600 });
    const loading = loadSecretKey({ dataDir });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const key = randomBytes(32);
    writeFileSync(path, `${key.toString('hex')}\n`);
    expect(await loading).toEqual(key);
  });

  it('refuses a key file that group or others can read, naming the path and its mode', async () => {
    const dataDir = tempDir();
    const path = join(dataDir, 'secret.key');
    const key = await loadSecretKey({ dataDir });
    chmodSync(path, 0o644);
    const error = await loadSecretKey({ dataDir }).catch((e: unknown) => e as ValidationError);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ path, message: expect.stringContaining('has mode 0644') });
    expect((error as Error).message).not.toContain(key.toString('hex'));
    chmodSync(path, 0o600);
    expect(await loadSecretKey({ dataDir })).toEqual(key);
  });

  it('refuses a key file that holds no key', async () => {
    const dataDir = tempDir();
    const path = join(dataDir, 'secret.key');
    writeFileSync(path, 'not a key at all\n', { mode: 0o600 });
    await expect(loadSecretKey({ dataDir })).rejects.toThrow(`${path}: must be a 32-byte key: 64 hex characters`);
  });

  it('takes the key from the environment as 64 hex characters or base64, creating no file', async () => {
    const dataDir = tempDir();
    const key = randomBytes(32);
    expect(await loadSecretKey({ env: key.toString('hex'), dataDir })).toEqual(key);
    expect(await loadSecretKey({ env: `${key.toString('hex').toUpperCase()}\n`, dataDir })).toEqual(key);
    expect(await loadSecretKey({ env: key.toString('base64'), dataDir })).toEqual(key);
    expect(await loadSecretKey({ env: key.toString('base64url'), dataDir })).toEqual(key);
    expect(existsSync(join(dataDir, 'secret.key'))).toBe(false);
  });

  it('answers a malformed environment key with an error naming the variable and the expected form, not the value', async () => {
    const dataDir = tempDir();
    const hex = randomBytes(32).toString('hex');
    for (const env of [
      '',
      'zz-not-a-key-zz',
      hex.slice(1),
      `${hex}0`,
      randomBytes(16).toString('base64'),
      randomBytes(33).toString('base64'),
    ]) {
      const error = await loadSecretKey({ env, dataDir }).catch((e: unknown) => e as ValidationError);
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({
        path: 'RUNLEDGER_SECRET_KEY',
        message: expect.stringContaining('64 hex characters, or 32 bytes in base64'),
      });
      if (env !== '') expect((error as Error).message).not.toContain(env);
    }
    expect(existsSync(join(dataDir, 'secret.key'))).toBe(false);
  });
});
