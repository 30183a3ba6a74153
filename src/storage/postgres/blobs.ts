import { NotFoundError } from '../../errors.js';
import { prepared, textArray, type Db } from './connection.js';

const PUT = prepared(
  'blob_put',
  `WITH c AS (INSERT INTO blob_chunks (hash, data, size) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING)
   INSERT INTO blob_owners (owner, hash) VALUES ($4, $1) ON CONFLICT DO NOTHING`,
);

/** One statement per chunk: a 1 MiB parameter each, so a 50 MB value never sits in one query buffer. */
export async function blobPut(
  db: Db,
  p: { owner: string; chunks: Array<{ hash: string; data: Uint8Array }> },
): Promise<void> {
  await db.atomic(async (d) => {
    for (const c of p.chunks)
      await d.rows(PUT, [
        c.hash,
        Buffer.from(c.data.buffer, c.data.byteOffset, c.data.byteLength),
        c.data.byteLength,
        p.owner,
      ]);
  });
}

const GET = prepared('blob_get', 'SELECT hash, data FROM blob_chunks WHERE hash = ANY ($1::text[])');

export async function blobGet(db: Db, p: { hashes: string[] }): Promise<Buffer[]> {
  const rows = await db.rows<{ hash: string; data: Buffer }>(GET, [textArray([...new Set(p.hashes)])]);
  const byHash = new Map(rows.map((r) => [r.hash, r.data]));
  return p.hashes.map((hash) => {
    const data = byHash.get(hash);
    if (!data) throw new NotFoundError(`blob chunk ${hash} not found`);
    return data;
  });
}

const DELETE = prepared(
  'blob_delete',
  `WITH held AS (DELETE FROM blob_owners WHERE owner = $1 RETURNING hash),
   gone AS (DELETE FROM blob_chunks c USING held WHERE c.hash = held.hash
     AND NOT EXISTS (SELECT 1 FROM blob_owners o WHERE o.hash = c.hash AND o.owner <> $1) RETURNING c.hash)
   SELECT count(*)::int AS n FROM gone`,
);

export async function blobDelete(db: Db, p: { owner: string }): Promise<number> {
  const [row] = await db.rows<{ n: number }>(DELETE, [p.owner]);
  return row?.n ?? 0;
}
