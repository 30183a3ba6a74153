-- The write path (issue 13): no index of every task by state. tasks_state (state, queue, seq)
-- took a new entry with every enqueue, claim and completion (a state change is never a HOT
-- update); the counts and the per-queue stats read the partial index of each state instead
-- (tasks_ready, tasks_leases, tasks_dead, tasks_finished, which now holds the state). Measured,
-- in one process, 20,000 no-op tasks, 7 interleaved pairs: bulk enqueue ~25,800 → ~28,000/s,
-- drain at concurrency 10 ~11,100 → ~12,100/s.
DROP INDEX tasks_state;
DROP INDEX tasks_finished;
CREATE INDEX tasks_finished ON tasks (updated_at, state) WHERE state IN ('completed', 'dead');
CREATE INDEX tasks_dead ON tasks (queue) WHERE state = 'dead';
