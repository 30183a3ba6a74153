import { ValidationError } from '../errors.js';

/** Listing projection rows (`Store.projectionList`, `projectionListRecent`): its parameters and the ranges both backends scan. */
export interface ProjectionListParams {
  name: string;
  prefix?: string;
  after?: string;
  before?: string;
  limit: number;
  backwards?: boolean;
}

/** Keeps rows whose JSON value has, at `field` (a dotted path: `input.workflow_id`), one of `in` (or none of `notIn`). */
export interface ProjectionMatch {
  field: string;
  in?: string[];
  notIn?: string[];
}

export interface ProjectionRecentParams {
  name: string;
  limit: number;
  /** Exclusive cursor: the `createdAt` and key of the last row of the previous page. */
  before?: { createdAt: number; key: string };
  /** Every group must hold; a group holds when one of its matches does. */
  where?: ProjectionMatch[][];
  /** Exclusive bounds on `createdAt` (ms). */
  createdAfter?: number;
  createdBefore?: number;
}

/** A dotted JSON path of a projection filter: interpolated into SQL, so only plain names pass. */
export function projectionFieldPath(field: string): string[] {
  const parts = field.split('.');
  if (parts.length > 4 || !parts.every((part) => /^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(part)))
    throw new ValidationError('field', `'${field}' is not a dotted path of plain names`);
  return parts;
}

/**
 * The createdAt range a recent-first listing scans: above `low`, at most `high` (the cursor's
 * createdAt, whose key then breaks the tie), below `below` when given.
 */
export function recentRange(p: ProjectionRecentParams): {
  low: number;
  high: number;
  below?: number;
  before?: { createdAt: number; key: string };
} {
  return {
    low: p.createdAfter ?? -Number.MAX_SAFE_INTEGER,
    high: p.before?.createdAt ?? Number.MAX_SAFE_INTEGER,
    ...(p.createdBefore !== undefined ? { below: p.createdBefore } : {}),
    ...(p.before ? { before: p.before } : {}),
  };
}

export interface ProjectionRow {
  key: string;
  value: unknown;
}

/** The key range a projection listing scans: bytewise, so a prefix is a range an index serves. */
export function projectionRange(p: ProjectionListParams): { low: string; high: string } {
  const prefix = p.prefix ?? '';
  // U+10FFFF sorts after every other code point in UTF-8 byte order (SQLite BINARY, PostgreSQL "C")
  let low = prefix;
  let high = `${prefix}\u{10FFFF}`;
  if (p.after !== undefined && p.after > low) low = p.after;
  if (p.before !== undefined && p.before < high) high = p.before;
  return { low, high };
}
