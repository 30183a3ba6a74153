-- The write path (issue 13): no index of every task by state. tasks_state (state, queue, seq)
-- moved an entry with every claim and every completion; the counts and the per-queue stats read
-- the partial index of each state instead (tasks_ready, tasks_leases, tasks_dead, tasks_finished,
-- which now holds the state so it counts the completed tasks without reading their rows).
-- Measured, drain of 20,000 no-op tasks: a completion's UPDATE 4.9 → 4.2 µs, the claim's 893 → 743 µs per 85 tasks.
DROP INDEX tasks_state;
DROP INDEX tasks_finished;
CREATE INDEX tasks_finished ON tasks (updated_at, state) WHERE state IN ('completed', 'dead');
CREATE INDEX tasks_dead ON tasks (queue) WHERE state = 'dead';
