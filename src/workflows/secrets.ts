import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NotFoundError, RunledgerError, ValidationError } from '../errors.js';
import type { Journal } from '../journal/journal.js';
import { formatBytes } from '../json.js';
import type { Store } from '../storage/store.js';

const PROJECTION = 'secret';
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const MAX_VALUE_BYTES = 64 * 1024;
const PAGE = 100;
const KEY_ENV = 'RUNLEDGER_SECRET_KEY';
const KEY_FILE = 'secret.key';
const KEY_FORM =
  'must be a 32-byte key: 64 hex characters, or 32 bytes in base64 (44 characters), e.g. from `openssl rand -hex 32`';
// a process that lost the 'wx' race may read the file before the winner wrote it: wait this long
const KEY_WRITE_WAIT_MS = 2_000;

/**
 * The 32-byte key secrets are encrypted with: `env` (the value of `RUNLEDGER_SECRET_KEY`: 64 hex
 * characters, or base64 of 32 bytes) when given, else `<dataDir>/secret.key`, generated on first
 * use with mode 0600. Two processes starting at once agree on one key file. A key file that group
 * or others can access is refused, as is a malformed key (the error never shows the key).
 *
 * @example const key = await loadSecretKey({ env: process.env.RUNLEDGER_SECRET_KEY, dataDir: '.runledger' });
 */
export async function loadSecretKey(options: { env?: string; dataDir: string }): Promise<Buffer> {
  if (options.env !== undefined) {
    const key = parseKey(options.env);
    if (!key) throw new ValidationError(KEY_ENV, `${KEY_FORM}; got ${options.env.trim().length} characters`);
    return key;
  }
  const path = join(options.dataDir, KEY_FILE);
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  let file: Awaited<ReturnType<typeof open>>;
  try {
    file = await open(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readKeyFile(path);
    throw error;
  }
  const key = randomBytes(32);
  try {
    // hex, so an operator can move the key into RUNLEDGER_SECRET_KEY as it is
    await file.writeFile(`${key.toString('hex')}\n`);
    // the secrets in the database are worthless without it: make it durable before any is written
    await file.sync();
  } catch (error) {
    await file.close();
    await rm(path, { force: true });
    throw error;
  }
  await file.close();
  return key;
}

function parseKey(text: string): Buffer | undefined {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  // standard or URL-safe alphabet, padded or not; Node decodes both
  if (/^[A-Za-z0-9+/]{43}=?$/.test(t) || /^[A-Za-z0-9_-]{43}=?$/.test(t)) return Buffer.from(t, 'base64');
  return undefined;
}

async function readKeyFile(path: string): Promise<Buffer> {
  const deadline = Date.now() + KEY_WRITE_WAIT_MS;
  for (;;) {
    const file = await open(path, 'r');
    let mode: number;
    let text: string;
    try {
      mode = (await file.stat()).mode & 0o777;
      text = await file.readFile('utf8');
    } finally {
      await file.close();
    }
    // Windows has no such mode bits: Node reports 0666 for every file there
    if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
      throw new ValidationError(
        path,
        `has mode 0${mode.toString(8).padStart(3, '0')}, open to group or others: a key file must be accessible by its owner only (chmod 600 ${path})`,
      );
    }
    if (text.length > 0) {
      const key = parseKey(text);
      if (!key) throw new ValidationError(path, KEY_FORM);
      return key;
    }
    if (Date.now() > deadline) {
      throw new ValidationError(
        path,
        'is empty: delete it to generate a new key (no secret can have been stored with an empty key)',
      );
    }
    await sleep(20);
  }
}

/** A secret as listed: never its value. Times are ms since the epoch (database clock). */
export interface SecretInfo {
  name: string;
  createdAt: number;
  updatedAt: number;
}

interface SecretRow extends SecretInfo {
  iv: string;
  tag: string;
  ciphertext: string;
}

/**
 * Named secrets, encrypted at rest with AES-256-GCM. Each change appends an audit event
 * (`secret.set`, `secret.deleted`, data `{ name }` only) to stream `secret:<name>` and writes the
 * `secret` projection row (IV, tag, ciphertext) in the same transaction. The name is the GCM
 * additional data, so a row moved to another name fails to decrypt instead of passing as it.
 * Values leave this class only through `values()`; callers pass them to `mask()` before writing.
 *
 * @example
 * const secrets = new Secrets(store, engine.journal, await loadSecretKey({ dataDir: '.runledger' }));
 * await secrets.set('API_TOKEN', 'tok_123');
 * const values = await secrets.values();
 * maskText(`Bearer ${values.API_TOKEN}`, Object.values(values)); // 'Bearer ***'
 */
export class Secrets {
  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    private readonly key: Buffer,
  ) {
    if (!Buffer.isBuffer(key) || key.length !== 32) throw new ValidationError('key', 'must be a Buffer of 32 bytes');
  }

  /** Creates or replaces a secret; a replaced one keeps its `createdAt`. */
  async set(name: string, value: string): Promise<SecretInfo> {
    checkSecretName(name);
    if (typeof value !== 'string' || value.length === 0)
      throw new ValidationError('value', 'must be a non-empty string');
    const bytes = Buffer.byteLength(value);
    if (bytes > MAX_VALUE_BYTES)
      throw new ValidationError('value', `is ${formatBytes(bytes)}, over the limit of ${formatBytes(MAX_VALUE_BYTES)}`);
    const sealed = encrypt(this.key, name, value);
    return this.store.transaction(async (tx) => {
      const previous = await tx.projectionGet({ name: PROJECTION, key: name });
      const now = await tx.now();
      const info = {
        name,
        createdAt: previous === undefined ? now : readRow(name, previous).createdAt,
        updatedAt: now,
      };
      await this.journal.append(`secret:${name}`, [{ type: 'secret.set', data: { name } }], { tx });
      const row: SecretRow = { ...info, ...sealed };
      await tx.projectionPut({ name: PROJECTION, key: name, value: row });
      return info;
    });
  }

  /** Every secret's name and times, sorted by name; never a value. */
  async list(): Promise<SecretInfo[]> {
    const infos: SecretInfo[] = [];
    for await (const [name, row] of this.rows())
      infos.push({ name, createdAt: row.createdAt, updatedAt: row.updatedAt });
    return infos;
  }

  /** Deletes a secret; `NotFoundError` when there is none of that name. */
  async delete(name: string): Promise<void> {
    checkSecretName(name);
    await this.store.transaction(async (tx) => {
      if ((await tx.projectionGet({ name: PROJECTION, key: name })) === undefined)
        throw new NotFoundError(`secret ${name} not found`);
      await this.journal.append(`secret:${name}`, [{ type: 'secret.deleted', data: { name } }], { tx });
      await tx.projectionDelete({ name: PROJECTION, key: name });
    });
  }

  /**
   * Every secret decrypted, name → value, for interpolation. Throws, naming every secret that does
   * not decrypt (another key, or an altered row), rather than return a partial set.
   */
  async values(): Promise<Record<string, string>> {
    const entries: Array<[string, string]> = [];
    const failed: string[] = [];
    for await (const [name, row] of this.rows()) {
      const value = decrypt(this.key, name, row);
      if (value === undefined) failed.push(name);
      else entries.push([name, value]);
    }
    if (failed.length > 0) {
      throw new RunledgerError(
        `secret${failed.length === 1 ? '' : 's'} ${failed.join(', ')} could not be decrypted: the key (${KEY_ENV} or <data dir>/${KEY_FILE}) is not the one ${failed.length === 1 ? 'it was' : 'they were'} stored with, or the stored row was altered`,
      );
    }
    // fromEntries defines properties: a secret named __proto__ stays a plain entry
    return Object.fromEntries(entries);
  }

  private async *rows(): AsyncGenerator<[string, SecretRow]> {
    let after: string | undefined;
    for (;;) {
      const page = await this.store.projectionList({
        name: PROJECTION,
        limit: PAGE,
        ...(after === undefined ? {} : { after }),
      });
      for (const { key, value } of page) yield [key, readRow(key, value)];
      if (page.length < PAGE) return;
      after = page[page.length - 1]!.key;
    }
  }
}

function checkSecretName(name: unknown): void {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new ValidationError('name', 'must be 1 to 64 letters, digits or underscores, not starting with a digit');
  }
}

function encrypt(key: Buffer, name: string, value: string): Pick<SecretRow, 'iv' | 'tag' | 'ciphertext'> {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(name, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return {
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    ciphertext: ciphertext.toString('base64'),
  };
}

/** The value, or undefined when the key or the additional data (the name it is stored under) do not match. */
function decrypt(key: Buffer, name: string, row: SecretRow): string | undefined {
  try {
    // a fixed tag length: otherwise GCM accepts a tag cut to 4 bytes, which is far easier to forge
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(row.iv, 'base64'), { authTagLength: 16 });
    decipher.setAAD(Buffer.from(name, 'utf8'));
    decipher.setAuthTag(Buffer.from(row.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(row.ciphertext, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

function readRow(name: string, value: unknown): SecretRow {
  const row = value as Partial<SecretRow> | null;
  const ok =
    typeof row === 'object' &&
    row !== null &&
    typeof row.iv === 'string' &&
    typeof row.tag === 'string' &&
    typeof row.ciphertext === 'string' &&
    typeof row.createdAt === 'number' &&
    typeof row.updatedAt === 'number';
  if (!ok) throw new RunledgerError(`secret ${name}: the stored row is malformed`);
  return row as SecretRow;
}
