import { NotFoundError } from '../../errors.js';
import type { Statements } from './connection.js';

export function blobPut(
  s: Statements,
  now: number,
  p: { owner: string; chunks: Array<{ hash: string; data: Uint8Array }> },
): void {
  const chunk = s.get(
    'INSERT INTO blob_chunks (hash, data, size, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING',
  );
  const owner = s.get('INSERT INTO blob_owners (owner, hash) VALUES (?, ?) ON CONFLICT DO NOTHING');
  for (const c of p.chunks) {
    chunk.run(c.hash, c.data, c.data.byteLength, now);
    owner.run(p.owner, c.hash);
  }
}

export function blobGet(s: Statements, p: { hashes: string[] }): Buffer[] {
  const get = s.get('SELECT data FROM blob_chunks WHERE hash = ?').pluck();
  return p.hashes.map((hash) => {
    const data = get.get(hash) as Buffer | undefined;
    if (!data) throw new NotFoundError(`blob chunk ${hash} not found`);
    return data;
  });
}

export function blobDelete(s: Statements, p: { owner: string }): number {
  const held = s.get('DELETE FROM blob_owners WHERE owner = ? RETURNING hash').pluck().all(p.owner) as string[];
  const drop = s.get(
    'DELETE FROM blob_chunks WHERE hash = ? AND NOT EXISTS (SELECT 1 FROM blob_owners WHERE hash = ?)',
  );
  let deleted = 0;
  for (const hash of held) deleted += drop.run(hash, hash).changes;
  return deleted;
}
