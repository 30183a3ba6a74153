import { ConflictError } from '../../errors.js';
import type { ApiKeyChange, ApiKeyRow, NewApiKey } from '../store-keys.js';
import { sqlState, type Db } from './connection.js';

interface Row {
  id: string;
  name: string;
  issued_to: string | null;
  prefix: string;
  hash: string;
  roles: string[];
  namespace: string;
  created_at: string | number;
  revoked_at: string | number | null;
  last_used_at: string | number | null;
}

export async function apiKeyInsert(db: Db, p: NewApiKey): Promise<ApiKeyRow> {
  try {
    const [row] = await db.rows<Row>(
      'INSERT INTO api_keys (id, name, issued_to, prefix, hash, roles, namespace) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *',
      [p.id, p.name, p.issuedTo, p.prefix, p.hash, p.roles, p.namespace],
    );
    return keyOf(row!);
  } catch (error) {
    if (sqlState(error) === '23505' && (error as { constraint?: string }).constraint === 'api_keys_name_key')
      throw new ConflictError(`a key named '${p.name}' exists already (revoked keys keep their names)`);
    throw error;
  }
}

export async function apiKeyList(db: Db): Promise<ApiKeyRow[]> {
  return (await db.rows<Row>('SELECT * FROM api_keys ORDER BY created_at, id')).map(keyOf);
}

export async function apiKeyFind(db: Db, p: { id: string } | { hash: string }): Promise<ApiKeyRow | undefined> {
  const [row] =
    'id' in p
      ? await db.rows<Row>('SELECT * FROM api_keys WHERE id = $1', [p.id])
      : await db.rows<Row>('SELECT * FROM api_keys WHERE hash = $1', [p.hash]);
  return row && keyOf(row);
}

export async function apiKeyUpdate(db: Db, p: { id: string; change: ApiKeyChange }): Promise<ApiKeyRow | undefined> {
  const c = p.change;
  const [row] =
    c.kind === 'rotate'
      ? await db.rows<Row>(
          'UPDATE api_keys SET hash = $1, prefix = $2 WHERE id = $3 AND revoked_at IS NULL RETURNING *',
          [c.hash, c.prefix, p.id],
        )
      : c.kind === 'revoke'
        ? await db.rows<Row>(
            'UPDATE api_keys SET revoked_at = coalesce(revoked_at, rl_now_ms()) WHERE id = $1 RETURNING *',
            [p.id],
          )
        : await db.rows<Row>('UPDATE api_keys SET last_used_at = rl_now_ms() WHERE id = $1 RETURNING *', [p.id]);
  return row && keyOf(row);
}

const ms = (value: string | number | null) => (value === null ? null : Number(value));

function keyOf(r: Row): ApiKeyRow {
  return {
    id: r.id,
    name: r.name,
    issuedTo: r.issued_to,
    prefix: r.prefix,
    hash: r.hash,
    roles: r.roles,
    namespace: r.namespace,
    createdAt: Number(r.created_at),
    revokedAt: ms(r.revoked_at),
    lastUsedAt: ms(r.last_used_at),
  };
}
