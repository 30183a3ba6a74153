-- The write path (issue 13): a claim writes no journal event; the event that ends an attempt
-- (task.completed, task.failed, task.dead, task.lease_expired) carries its worker and start.
-- claimed_at is that start (set by each claim, kept after it); worker_id now keeps the worker of
-- the last attempt after it ended (it named only the holder of a running task before).
ALTER TABLE tasks ADD COLUMN claimed_at INTEGER;
