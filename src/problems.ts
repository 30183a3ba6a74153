import type { z } from 'zod';
import type { Problem } from './errors.js';

/** `['steps', 1, 'config', 'url']` → `steps[1].config.url` */
export function jsonPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (out, key) => (typeof key === 'number' ? `${out}[${key}]` : out === '' ? String(key) : `${out}.${String(key)}`),
    '',
  );
}

/** Zod's issues as problems with JSON paths, said plainly (no "expected record", no "Invalid discriminator value"). */
export function zodProblems(error: z.ZodError, prefix = ''): Problem[] {
  return error.issues.map((issue) => ({
    path: jsonPath([...(prefix ? [prefix] : []), ...issue.path]) || prefix || '(body)',
    message: plainMessage(issue),
  }));
}

const KINDS: Record<string, string> = {
  record: 'an object',
  object: 'an object',
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  bigint: 'a whole number',
  date: 'a date',
};

/** One zod issue said plainly: 'required', 'must be a list (got string)', 'must be one of a, b'. */
function plainMessage(issue: z.core.$ZodIssue): string {
  const received = /received (\w+)/.exec(issue.message)?.[1];
  const list = (values: readonly unknown[]) =>
    values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
  switch (issue.code) {
    case 'invalid_type':
      if (received === 'undefined') return 'required';
      return `must be ${KINDS[issue.expected] ?? issue.expected}${received ? ` (got ${received === 'array' ? 'a list' : received})` : ''}`;
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.map((k) => `'${k}'`).join(', ')}`;
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${list(issue.values)}` : `must be one of ${list(issue.values)}`;
    case 'too_small':
    case 'too_big': {
      const limit = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum);
      const least = issue.code === 'too_small' ? 'at least' : 'at most';
      if (issue.origin === 'string') return `must have ${least} ${limit} character${limit === 1 ? '' : 's'}`;
      if (issue.origin === 'array' || issue.origin === 'set')
        return issue.message.startsWith('Too')
          ? `must have ${least} ${limit} item${limit === 1 ? '' : 's'}`
          : issue.message;
      return `must be ${least} ${limit}`;
    }
    case 'invalid_union': {
      const expected = /Expected (.+)$/.exec(issue.message)?.[1];
      if ((issue as { discriminator?: string }).discriminator && expected)
        return `must be one of ${expected.replace(/'/g, '').split(' | ').join(', ')}`;
      return issue.message === 'Invalid input' ? 'matches none of the accepted forms' : issue.message;
    }
    case 'invalid_format':
      // a message the schema wrote itself says more than the format's name
      if (!/^Invalid/.test(issue.message)) return issue.message;
      return `must be ${issue.format === 'datetime' ? 'an ISO 8601 date-time' : `a valid ${issue.format}`}`;
    default:
      return issue.message;
  }
}
