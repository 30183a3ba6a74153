import { describe, expect, it } from 'vitest';
import { inline, prepared } from './connection.js';

describe('a statement with its params written in', () => {
  it('quotes every param as an untyped E literal, NULL for null, and leaves the text around them alone', () => {
    const sql = prepared('x', 'SELECT * FROM f($1, $2::jsonb, $3, $10, $4)');
    const params = ["it's \\ $2", '{"a":1}', null, 7, 'a', 'b', 'c', 'd', 'e', true];
    expect(inline(sql, params)).toBe(`SELECT * FROM f(E'it''s \\\\ $2', E'{"a":1}'::jsonb, NULL, E'true', E'7')`);
  });

  it('gives up on a param it cannot write as text, or a string holding NUL (a message ends at NUL)', () => {
    expect(inline('SELECT $1', [Buffer.from('x')])).toBeNull();
    expect(inline('SELECT $1', [{ a: 1 }])).toBeNull();
    expect(inline('SELECT $1', ['a\u0000b'])).toBeNull();
  });
});
