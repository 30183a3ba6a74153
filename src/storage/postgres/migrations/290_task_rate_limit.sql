-- Rate limits for tasks (issue 40): a task may name a rate limit (`TaskRate`: name, units, key) that the
-- worker takes before each attempt's handler runs; no room, the task is released to its next slot
-- without using up an attempt. Read back with the task: no index.
ALTER TABLE tasks ADD COLUMN rate_limit jsonb;
