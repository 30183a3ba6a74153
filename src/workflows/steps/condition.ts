import { isDeepStrictEqual } from 'node:util';
import type { Condition } from '../schema.js';

/** The value at `path` (`body.items[0].state`) in `value`, or undefined when any segment is missing. Own properties only. */
export function readPath(value: unknown, path: string): unknown {
  let current = value;
  for (const match of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    const key = match[2] === undefined ? match[1]! : Number(match[2]);
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}

/**
 * Whether `condition` holds for `value`: the value at its path equals (deeply), is one of `in`, or
 * exists (is defined and not null) as `exists` says.
 *
 * @example holds({ path: 'body.status', in: ['complete', 'done'] }, { status: 200, body: { status: 'done' } }) // true
 */
export function holds(condition: Condition, value: unknown): boolean {
  const at = readPath(value, condition.path);
  if (condition.exists !== undefined) return (at !== undefined && at !== null) === condition.exists;
  if (condition.in !== undefined) return condition.in.some((candidate) => isDeepStrictEqual(candidate, at));
  return isDeepStrictEqual(condition.equals, at);
}

/** `body.status = "failed"` (what a poll's error says matched), with the answer's `body.error` when it has one. */
export function describeCondition(condition: Condition, value: unknown): string {
  const error = readPath(value, 'body.error');
  const why =
    error === undefined || error === null ? '' : `: ${typeof error === 'string' ? error : JSON.stringify(error)}`;
  return `${condition.path} = ${JSON.stringify(readPath(value, condition.path)) ?? 'undefined'}${why}`;
}
