/**
 * Test helpers for users of runledger (`runledger/testing`): an engine whose clock the test moves, fresh databases, a
 * wait helper, and crash points to kill a process exactly where durable engines break.
 *
 * @example
 * const t = await createTestEngine({ workflows: [trial] });
 * await t.start(trial, { user: 'ada' });
 * await t.advance('14d'); // the 14-day sleep is over
 * const engine = await createEngine({ database: createSqlitePath() });
 * await eventually(async () => (await engine.queue.get(id)).state === 'completed');
 */
export { createPostgresDatabase, createSqlitePath, dropPostgresTestDatabases } from './databases.js';
export { eventually } from './engine.js';
export { createTestEngine, TestEngine, type TestEngineOptions } from './test-engine.js';
export { checkCrashRecovery, type CrashReport } from './replay.js';
export { recordedHistory, replayHistories, type RecordedHistory, type ReplayResult } from '../runtime/replay.js';
export { armCrashPoint, type CrashPointName } from '../crash.js';
