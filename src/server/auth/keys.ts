import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ConflictError, NotFoundError, ValidationError } from '../../errors.js';
import { newId } from '../../ids.js';
import type { Actor, Role } from './actor.js';

/**
 * How long this process trusts what it read of a key (and whether any key exists) before reading
 * the store again. A key revoked here stops at once; one revoked by another process stops working
 * in this one within this time. One read per key per 10 s keeps a request off the database.
 */
export const KEY_CACHE_MS = 10_000;
/** Unknown secrets remembered at most (a flood of made-up keys must not grow the cache without bound). */
const MAX_CACHED = 10_000;
/** The key name RUNLEDGER_TOKEN authenticates as. */
export const BOOTSTRAP = 'bootstrap';

/** One API key as the store keeps it: the sha256 of its secret, never the secret. */
export interface KeyRow {
  id: string;
  name: string;
  issuedTo: string | null;
  prefix: string;
  hash: string;
  roles: string[];
  namespace: string;
  createdAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

/**
 * The `api_keys` table, as the server reaches it: `openApp` hands the store's `apiKey*` methods in
 * (the server imports nothing of storage/).
 */
export interface KeyTable {
  apiKeyInsert(p: Omit<KeyRow, 'createdAt' | 'revokedAt' | 'lastUsedAt'>): Promise<KeyRow>;
  apiKeyList(): Promise<KeyRow[]>;
  apiKeyFind(p: { id: string } | { hash: string }): Promise<KeyRow | undefined>;
  apiKeyUpdate(p: {
    id: string;
    change: { kind: 'rotate'; hash: string; prefix: string } | { kind: 'revoke' } | { kind: 'use' };
  }): Promise<KeyRow | undefined>;
}

export interface NewKey {
  name: string;
  issuedTo?: string | undefined;
  roles: Role[];
  namespace?: string | undefined;
}

/** A new secret: `rl_` and 32 random bytes, base64url. Shown once; only its sha256 is stored. */
export function newSecret(): string {
  return `rl_${randomBytes(32).toString('base64url')}`;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The API keys of one server: created, listed, rotated and revoked in the store, and a secret
 * resolved to its `Actor` from a short-lived cache (see KEY_CACHE_MS). RUNLEDGER_TOKEN, when given,
 * is the `bootstrap` admin key. Authentication is on when there is a token or any key was ever created.
 *
 * @example const keys = new ApiKeys(opened.keys, { token }); const actor = await keys.authenticate(secret);
 */
export class ApiKeys {
  private readonly cache = new Map<string, { actor: Actor | null; id: string | null; until: number }>();
  private anyKey: { value: boolean; until: number } = { value: false, until: 0 };
  private readonly tokenHash: Buffer | null;
  private readonly now: () => number;

  constructor(
    private readonly table: KeyTable | undefined,
    options: { token?: string | undefined; now?: () => number } = {},
  ) {
    this.tokenHash = options.token ? Buffer.from(sha256(options.token), 'hex') : null;
    this.now = options.now ?? Date.now;
  }

  /** Whether requests need a key: a token is set, or a key exists (revoked ones count: revoking the last key never opens the server). */
  async enabled(): Promise<boolean> {
    if (this.tokenHash || this.anyKey.value) return true;
    if (!this.table || this.now() < this.anyKey.until) return false;
    const value = (await this.table.apiKeyList()).length > 0;
    this.anyKey = { value, until: this.now() + KEY_CACHE_MS };
    return value;
  }

  /** The actor of a secret, or null for one unknown or revoked. */
  async authenticate(secret: string): Promise<Actor | null> {
    const hash = sha256(secret);
    if (this.tokenHash && timingSafeEqual(Buffer.from(hash, 'hex'), this.tokenHash))
      return { key: BOOTSTRAP, roles: ['admin'] };
    if (!this.table) return null;
    const cached = this.cache.get(hash);
    if (cached && this.now() < cached.until) return cached.actor;
    const row = await this.keys().apiKeyFind({ hash });
    const live = row && row.revokedAt === null ? row : null;
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    this.cache.set(hash, { actor: live && actorOf(live), id: live?.id ?? null, until: this.now() + KEY_CACHE_MS });
    // once per key per KEY_CACHE_MS: a request never waits for this write
    if (live)
      this.keys()
        .apiKeyUpdate({ id: live.id, change: { kind: 'use' } })
        .catch(() => {});
    return live && actorOf(live);
  }

  async create(p: NewKey): Promise<{ key: KeyRow; secret: string }> {
    if (p.name === BOOTSTRAP)
      throw new ValidationError('name', `'${BOOTSTRAP}' is the name RUNLEDGER_TOKEN authenticates as; choose another`);
    const secret = newSecret();
    const key = await this.keys().apiKeyInsert({
      id: newId('key'),
      name: p.name,
      issuedTo: p.issuedTo ?? null,
      prefix: secret.slice(0, 8),
      hash: sha256(secret),
      roles: [...new Set(p.roles)],
      namespace: p.namespace ?? 'default',
    });
    this.anyKey = { value: true, until: Number.POSITIVE_INFINITY };
    return { key, secret };
  }

  list(): Promise<KeyRow[]> {
    return this.keys().apiKeyList();
  }

  /** A new secret for the key; the old one stops working (in other processes within KEY_CACHE_MS). */
  async rotate(id: string): Promise<{ key: KeyRow; secret: string }> {
    const secret = newSecret();
    const key = await this.keys().apiKeyUpdate({
      id,
      change: { kind: 'rotate', hash: sha256(secret), prefix: secret.slice(0, 8) },
    });
    if (!key) {
      if (await this.keys().apiKeyFind({ id })) throw new ConflictError(`key ${id} is revoked: create a new key`);
      throw new NotFoundError(`no key ${id}`);
    }
    this.forget(id);
    return { key, secret };
  }

  async revoke(id: string): Promise<KeyRow> {
    const key = await this.keys().apiKeyUpdate({ id, change: { kind: 'revoke' } });
    if (!key) throw new NotFoundError(`no key ${id}`);
    this.forget(id);
    return key;
  }

  private keys(): KeyTable {
    if (!this.table) throw new Error('this server has no key table (createApp without `keys`)');
    return this.table;
  }

  private forget(id: string): void {
    for (const [hash, entry] of this.cache) if (entry.id === id) this.cache.delete(hash);
  }
}

function actorOf(row: KeyRow): Actor {
  return { key: row.name, ...(row.issuedTo ? { issuedTo: row.issuedTo } : {}), roles: row.roles as Role[] };
}
