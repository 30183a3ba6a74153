import { ConflictError } from '../../errors.js';
import type { ApiKeyChange, ApiKeyRow, NewApiKey } from '../store-keys.js';
import type { Statements } from './connection.js';

interface Row {
  id: string;
  name: string;
  issued_to: string | null;
  prefix: string;
  hash: string;
  roles: string;
  namespace: string;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
}

export function apiKeyInsert(s: Statements, now: number, p: NewApiKey): ApiKeyRow {
  try {
    const row = s
      .get(
        'INSERT INTO api_keys (id, name, issued_to, prefix, hash, roles, namespace, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *',
      )
      .get(p.id, p.name, p.issuedTo, p.prefix, p.hash, JSON.stringify(p.roles), p.namespace, now) as Row;
    return keyOf(row);
  } catch (error) {
    if (/UNIQUE constraint failed: api_keys\.name/.test(String((error as Error).message)))
      throw new ConflictError(`a key named '${p.name}' exists already (revoked keys keep their names)`);
    throw error;
  }
}

export function apiKeyList(s: Statements): ApiKeyRow[] {
  return (s.get('SELECT * FROM api_keys ORDER BY created_at, id').all() as Row[]).map(keyOf);
}

export function apiKeyFind(s: Statements, p: { id: string } | { hash: string }): ApiKeyRow | undefined {
  const row = (
    'id' in p
      ? s.get('SELECT * FROM api_keys WHERE id = ?').get(p.id)
      : s.get('SELECT * FROM api_keys WHERE hash = ?').get(p.hash)
  ) as Row | undefined;
  return row && keyOf(row);
}

export function apiKeyUpdate(
  s: Statements,
  now: number,
  p: { id: string; change: ApiKeyChange },
): ApiKeyRow | undefined {
  const c = p.change;
  const row = (
    c.kind === 'rotate'
      ? s
          .get('UPDATE api_keys SET hash = ?, prefix = ? WHERE id = ? AND revoked_at IS NULL RETURNING *')
          .get(c.hash, c.prefix, p.id)
      : c.kind === 'revoke'
        ? s.get('UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? RETURNING *').get(now, p.id)
        : s.get('UPDATE api_keys SET last_used_at = ? WHERE id = ? RETURNING *').get(now, p.id)
  ) as Row | undefined;
  return row && keyOf(row);
}

function keyOf(r: Row): ApiKeyRow {
  return {
    id: r.id,
    name: r.name,
    issuedTo: r.issued_to,
    prefix: r.prefix,
    hash: r.hash,
    roles: JSON.parse(r.roles),
    namespace: r.namespace,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
    lastUsedAt: r.last_used_at,
  };
}
