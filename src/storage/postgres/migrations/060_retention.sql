-- Retention deletes finished tasks oldest first: this index finds them without scanning the live ones.
CREATE INDEX tasks_finished ON tasks (updated_at) WHERE state IN ('completed', 'dead');
