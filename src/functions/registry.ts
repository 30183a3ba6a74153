import { randomBytes } from 'node:crypto';
import { toMs, type Duration } from '../duration.js';
import { ConflictError, NotFoundError, RunledgerError, ValidationError } from '../errors.js';
import type { Journal } from '../journal/journal.js';
import type { Store } from '../storage/store.js';
import { checkUrl } from '../workflows/actions/http-send.js';

const PROJECTION = 'function';
const NAME = /^[A-Za-z][A-Za-z0-9._-]{0,63}$/;
const VERSION = /^[A-Za-z0-9._-]{1,64}$/;
const PAGE = 100;
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_RETRIES = 3;
/** Changes of one function made at once: each tries again when another went first (see `changing`). */
const MAX_ATTEMPTS = 20;

/** What `POST /functions` takes: a function endpoint, one version of it. */
export interface FunctionRegistration {
  name: string;
  url: string;
  /** Default '1'. New runs start on the version registered last; a run keeps the one it started on. */
  version?: string;
  /** The HMAC key its requests are signed with, 16–256 characters. Default: the one it has, or a new one. */
  secret?: string;
  /** Each call's time limit, 1 s to 5 min. Default 30 s. */
  timeout?: Duration;
  /** Attempts of a step in all, the first included, 1–100. Default 3. */
  retries?: number;
}

/** A function as listed: never its secret. Times are ms since the epoch (database clock). */
export interface FunctionInfo {
  name: string;
  /** The version new runs start on. */
  version: string;
  url: string;
  versions: Array<{ version: string; url: string }>;
  timeoutMs: number;
  retries: number;
  createdAt: number;
  updatedAt: number;
}

/** A function as a call needs it: with its secret. */
export interface FunctionRecord extends FunctionInfo {
  secret: string;
}

/**
 * The registered function endpoints. Each change appends an audit event (`function.registered` with the name,
 * version and URL; `function.deleted`) to stream `function:<name>` and writes the `function` projection row in the
 * same transaction, so every process on the database sees one registry.
 *
 * @example
 * const { info, secret } = await registry.register({ name: 'onboard', url: 'http://127.0.0.1:9000/' });
 */
export class FunctionRegistry {
  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
  ) {}

  /** Adds (or replaces) a version and makes it the one new runs start on; `secret` is set when one was generated. */
  async register(registration: FunctionRegistration): Promise<{ info: FunctionInfo; secret?: string }> {
    const r = checkRegistration(registration);
    return this.changing(r.name, async (tx, expectedVersion) => {
      const previous = await this.read(tx, r.name);
      const now = await tx.now();
      const generated = r.secret === undefined && previous === undefined ? randomBytes(32).toString('hex') : undefined;
      const versions = (previous?.versions ?? []).filter((v) => v.version !== r.version);
      const record: FunctionRecord = {
        name: r.name,
        version: r.version,
        url: r.url,
        versions: [...versions, { version: r.version, url: r.url }],
        timeoutMs: r.timeoutMs ?? previous?.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        retries: r.retries ?? previous?.retries ?? DEFAULT_RETRIES,
        secret: r.secret ?? previous?.secret ?? generated!,
        createdAt: previous?.createdAt ?? now,
        updatedAt: now,
      };
      const data = { name: r.name, version: r.version, url: r.url };
      await this.journal.append(`function:${r.name}`, [{ type: 'function.registered', data }], { tx, expectedVersion });
      await tx.projectionPut({ name: PROJECTION, key: r.name, value: record });
      return { info: infoOf(record), ...(generated ? { secret: generated } : {}) };
    });
  }

  /** The function with its secret, or undefined. */
  get(name: string): Promise<FunctionRecord | undefined> {
    return this.read(this.store, name);
  }

  /** The function as the API shows it; NotFoundError when there is none. */
  async info(name: string): Promise<FunctionInfo> {
    const record = await this.get(name);
    if (!record) throw new NotFoundError(`function ${name} not found`);
    return infoOf(record);
  }

  /** Every function, sorted by name. */
  async list(): Promise<FunctionInfo[]> {
    const infos: FunctionInfo[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.store.projectionList({ name: PROJECTION, limit: PAGE, ...(after ? { after } : {}) });
      for (const { key, value } of page) infos.push(infoOf(readRecord(key, value)));
      if (page.length < PAGE) return infos;
      after = page[page.length - 1]!.key;
    }
  }

  /** Deletes a function and all its versions; NotFoundError when there is none. */
  async delete(name: string): Promise<void> {
    await this.changing(name, async (tx, expectedVersion) => {
      if (!(await this.read(tx, name))) throw new NotFoundError(`function ${name} not found`);
      const deleted = [{ type: 'function.deleted', data: { name } }];
      await this.journal.append(`function:${name}`, deleted, { tx, expectedVersion });
      await tx.projectionDelete({ name: PROJECTION, key: name });
    });
  }

  /**
   * `change` in a transaction that appends to the function's stream at the version it read: two changes racing on
   * PostgreSQL (READ COMMITTED: both read the record before either writes) would each write the record they read,
   * the later one dropping the other's version; the append of the later fails (ConflictError), and it is made again.
   */
  private async changing<T>(name: string, change: (tx: Store, expectedVersion: number) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.store.transaction(async (tx) => {
          const [last] = await this.journal.readStream(`function:${name}`, { backwards: true, limit: 1, tx });
          return change(tx, last?.version ?? 0);
        });
      } catch (error) {
        if (!(error instanceof ConflictError) || attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  }

  private async read(store: Store, name: string): Promise<FunctionRecord | undefined> {
    const value = await store.projectionGet({ name: PROJECTION, key: name });
    return value === undefined ? undefined : readRecord(name, value);
  }
}

/** A function's name: what registration and a `function` step accept. */
export function checkFunctionName(name: unknown, path = 'name'): string {
  if (typeof name !== 'string' || !NAME.test(name))
    throw new ValidationError(path, `must be 1–64 letters, digits, '.', '_' or '-', starting with a letter`);
  return name;
}

function checkRegistration(r: FunctionRegistration) {
  const name = checkFunctionName(r.name);
  const version = r.version ?? '1';
  if (typeof version !== 'string' || !VERSION.test(version))
    throw new ValidationError('version', "must be 1–64 letters, digits, '.', '_' or '-'");
  let url: URL;
  try {
    url = new URL(r.url);
  } catch {
    throw new ValidationError('url', `must be an absolute http(s) URL (got ${JSON.stringify(r.url)})`);
  }
  try {
    checkUrl(url);
  } catch (error) {
    throw new ValidationError('url', (error as Error).message);
  }
  if (r.secret !== undefined && (typeof r.secret !== 'string' || r.secret.length < 16 || r.secret.length > 256))
    throw new ValidationError('secret', 'must be 16–256 characters');
  const timeoutMs = r.timeout === undefined ? undefined : toMs(r.timeout, 'timeout');
  if (timeoutMs !== undefined && (timeoutMs < 1000 || timeoutMs > 300_000))
    throw new ValidationError('timeout', `must be from 1s to 5m (got ${timeoutMs} ms)`);
  if (r.retries !== undefined && (!Number.isInteger(r.retries) || r.retries < 1 || r.retries > 100))
    throw new ValidationError('retries', `must be an integer from 1 to 100 (got ${r.retries})`);
  return { name, version, url: url.href, secret: r.secret, timeoutMs, retries: r.retries };
}

function infoOf({ secret: _, ...info }: FunctionRecord): FunctionInfo {
  return info;
}

function readRecord(name: string, value: unknown): FunctionRecord {
  const r = value as Partial<FunctionRecord> | null;
  if (typeof r?.secret !== 'string' || !Array.isArray(r.versions) || typeof r.version !== 'string')
    throw new RunledgerError(`function ${name}: the stored row is malformed`);
  return r as FunctionRecord;
}
