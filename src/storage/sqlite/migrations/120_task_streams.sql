-- A task's stream `task:<id>` has no `streams` row: its version is its newest event's (the
-- `(stream_id, version)` key finds it), as on PostgreSQL (migration 160 there, which says why).
DELETE FROM streams WHERE stream_id >= 'task:' AND stream_id < 'task;';
