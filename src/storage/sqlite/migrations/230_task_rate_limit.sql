-- Rate limits for tasks (issue 40), as on PostgreSQL (migration 290 there): the task's `TaskRate` as JSON text.
ALTER TABLE tasks ADD COLUMN rate_limit TEXT;
