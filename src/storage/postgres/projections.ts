import {
  projectionFieldPath,
  projectionRange,
  recentRange,
  type ProjectionListParams,
  type ProjectionRecentParams,
  type ProjectionRow,
} from '../projections.js';
import { prepared, textArray, type Db } from './connection.js';

// Reads and deletes of projection rows; their writes (sent with a transaction's next statement) are in puts.ts.

const PROJECTION_GET = prepared('projection_get', 'SELECT value FROM projections WHERE name = $1 AND key = $2');

export async function projectionGet(db: Db, p: { name: string; key: string }): Promise<unknown> {
  const [row] = await db.rows<{ value: unknown }>(PROJECTION_GET, [p.name, p.key]);
  return row ? row.value : undefined;
}

const PROJECTION_GET_MANY = prepared(
  'projection_get_many',
  'SELECT key, value FROM projections WHERE name = $1 AND key = ANY($2::text[])',
);

export async function projectionGetMany(db: Db, p: { name: string; keys: string[] }): Promise<ProjectionRow[]> {
  if (p.keys.length === 0) return [];
  return db.rows<ProjectionRow>(PROJECTION_GET_MANY, [p.name, textArray([...new Set(p.keys)])]);
}

/** The four shapes of a projection list (after a key or from it, either order), each prepared once per connection. */
const listSql = (op: '>' | '>=', order: 'ASC' | 'DESC') =>
  prepared(
    `projection_list_${op === '>' ? 'after' : 'from'}_${order.toLowerCase()}`,
    `SELECT key, value FROM projections WHERE name = $1 AND key ${op} $2 AND key < $3 ORDER BY key ${order} LIMIT $4`,
  );
const LIST = {
  after: { ASC: listSql('>', 'ASC'), DESC: listSql('>', 'DESC') },
  from: { ASC: listSql('>=', 'ASC'), DESC: listSql('>=', 'DESC') },
};

export async function projectionList(db: Db, p: ProjectionListParams): Promise<ProjectionRow[]> {
  const { low, high } = projectionRange(p);
  const after = p.after !== undefined && p.after >= (p.prefix ?? '');
  return db.rows<ProjectionRow>(LIST[after ? 'after' : 'from'][p.backwards ? 'DESC' : 'ASC'], [
    p.name,
    low,
    high,
    p.limit,
  ]);
}

// stored columns of `value -> 'createdAt'` and `value ->> 'status'`, which the listing indexes hold (migration 320)
const CREATED = 'created';

export async function projectionListRecent(db: Db, p: ProjectionRecentParams): Promise<ProjectionRow[]> {
  const args: unknown[] = [p.name];
  const arg = (value: unknown) => {
    args.push(value);
    return `$${args.length}`;
  };
  const { low, high, below, before } = recentRange(p);
  // a range of the index, numbers as jsonb; strings, booleans, objects and nulls sort outside any range of numbers
  const where = [
    'name = $1',
    `${CREATED} > ${arg(JSON.stringify(low))}::jsonb`,
    `${CREATED} <= ${arg(JSON.stringify(high))}::jsonb`,
  ];
  if (below !== undefined) where.push(`${CREATED} < ${arg(JSON.stringify(below))}::jsonb`);
  if (before) where.push(`(${CREATED} < ${arg(JSON.stringify(before.createdAt))}::jsonb OR key < ${arg(before.key)})`);
  for (const group of p.where ?? []) {
    const any = group.map((m) => {
      const parts = projectionFieldPath(m.field);
      const path =
        parts.length > 1
          ? `(value #>> '{${parts.join(',')}}')`
          : parts[0] === 'status'
            ? 'status'
            : `(value ->> '${parts[0]}')`;
      const conditions: string[] = [];
      if (m.in) conditions.push(m.in.length ? `${path} = ANY(${arg(textArray(m.in))}::text[])` : 'false');
      if (m.notIn?.length)
        conditions.push(`(${path} IS NULL OR NOT (${path} = ANY(${arg(textArray(m.notIn))}::text[])))`);
      return conditions.length ? `(${conditions.join(' AND ')})` : 'true';
    });
    where.push(`(${any.join(' OR ') || 'false'})`);
  }
  return db.rows<ProjectionRow>(
    `SELECT key, value FROM projections WHERE ${where.join(' AND ')} ORDER BY ${CREATED} DESC, key DESC LIMIT ${arg(p.limit)}`,
    args,
  );
}

export async function projectionDelete(db: Db, p: { name: string; key: string }): Promise<void> {
  await db.rows('DELETE FROM projections WHERE name = $1 AND key = $2', [p.name, p.key]);
}
