-- Fairness for tasks (issue 40), as on PostgreSQL (migration 280 there, which says why): a task's
-- fairness group and its turn, `fair_at`, which `sort_at` reads in place of the run-at.
ALTER TABLE tasks ADD COLUMN fair_group TEXT;
ALTER TABLE tasks ADD COLUMN fair_at INTEGER;

DROP INDEX tasks_ready;
ALTER TABLE tasks DROP COLUMN sort_at;
ALTER TABLE tasks ADD COLUMN sort_at INTEGER
  GENERATED ALWAYS AS (coalesce(fair_at, run_at) - priority * 10000) VIRTUAL;
CREATE INDEX tasks_ready ON tasks (queue, sort_at, seq) WHERE state = 'ready';
CREATE INDEX tasks_fair ON tasks (queue, fair_group, fair_at) WHERE fair_group IS NOT NULL AND state = 'ready';
CREATE INDEX tasks_fair_front ON tasks (queue, fair_at) WHERE fair_group IS NOT NULL AND state = 'ready';
CREATE INDEX tasks_concurrency_order ON tasks (queue, concurrency_key, sort_at, seq)
  WHERE concurrency_key IS NOT NULL AND state = 'ready';
