/**
 * The types the event type indexes leave out (SQLite migration 110, PostgreSQL 150): the engine's
 * own, four of every five events a workflow or a drain writes, and dense wherever they are read,
 * so a read of one examines events in order instead. `INDEXED` is the indexes' condition as the
 * queries that use them must spell it (a planner uses a partial index only where the query says
 * its condition).
 */
export const unindexedType = (type: string): boolean => type.startsWith('step.') || type.startsWith('task.');

export const INDEXED = "substr(type, 1, 5) NOT IN ('step.', 'task.')";
