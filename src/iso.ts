/*
 * Times are integers (ms) in the database and ISO 8601 UTC in the API (DESIGN.md, Conventions): the one conversion,
 * a kernel so every floor that shows a record (server/records, workflows/record, agents, the CLI) uses the same.
 */

/**
 * A time in ms as ISO 8601 UTC; a missing time (null, undefined) stays missing.
 *
 * @example
 * iso(0); // '1970-01-01T00:00:00.000Z'
 */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | undefined): string | undefined;
export function iso(ms: number | null | undefined): string | null | undefined {
  return ms === null || ms === undefined ? ms : new Date(ms).toISOString();
}
