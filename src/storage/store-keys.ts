/** One API key as stored: never its secret, only the sha256 of it (hex) and its first 8 characters. */
export interface ApiKeyRow {
  id: string;
  name: string;
  issuedTo: string | null;
  prefix: string;
  hash: string;
  roles: string[];
  /** `'*'` for every namespace, else one namespace. */
  namespace: string;
  createdAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

export type NewApiKey = Pick<ApiKeyRow, 'id' | 'name' | 'issuedTo' | 'prefix' | 'hash' | 'roles' | 'namespace'>;

/** What `apiKeyUpdate` does to a key: a new secret (not to a revoked key), revocation (once), or its use now. */
export type ApiKeyChange = { kind: 'rotate'; hash: string; prefix: string } | { kind: 'revoke' } | { kind: 'use' };

/** The `api_keys` table (issue 45). Times are the database clock's. */
export interface KeyStore {
  /** Stores a new key; a name already taken (by a revoked key too) is a ConflictError naming it. */
  apiKeyInsert(p: NewApiKey): Promise<ApiKeyRow>;
  /** Every key, revoked ones too, oldest first. */
  apiKeyList(): Promise<ApiKeyRow[]>;
  /** The key with this id, or whose secret has this hash (revoked ones too); undefined when none. */
  apiKeyFind(p: { id: string } | { hash: string }): Promise<ApiKeyRow | undefined>;
  /**
   * Changes a key and returns it; undefined when there is no such key, or a rotation finds it revoked.
   * Revoking again keeps the first revocation time.
   */
  apiKeyUpdate(p: { id: string; change: ApiKeyChange }): Promise<ApiKeyRow | undefined>;
}
