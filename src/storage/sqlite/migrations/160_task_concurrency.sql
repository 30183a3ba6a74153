-- Flow control in the claim (issue 40), as on PostgreSQL (migration 220 there, which says why):
-- a task's concurrency key and limit, a queue's limit, and priority aging by `sort_at`, a task's
-- run-at moved 10 s earlier per point of priority (AGING_STEP_MS in src/storage/tasks.ts). Virtual:
-- computed when read, held by the index, so adding it rewrites nothing.
ALTER TABLE tasks ADD COLUMN concurrency_key TEXT;
ALTER TABLE tasks ADD COLUMN concurrency_limit INTEGER;
ALTER TABLE tasks ADD COLUMN sort_at INTEGER GENERATED ALWAYS AS (run_at - priority * 10000) VIRTUAL;

DROP INDEX tasks_ready;
CREATE INDEX tasks_ready ON tasks (queue, sort_at, seq) WHERE state = 'ready';
CREATE INDEX tasks_concurrency ON tasks (queue, concurrency_key, state, seq, run_at)
  WHERE concurrency_key IS NOT NULL AND state IN ('ready', 'running');

CREATE TABLE queue_limits (
  queue       TEXT PRIMARY KEY,
  concurrency INTEGER NOT NULL CHECK (concurrency > 0),
  updated_at  INTEGER NOT NULL
);
