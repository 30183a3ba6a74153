-- A concurrency key's state lives in its lock row (as on PostgreSQL); the states of the projection `ordering` move here.
ALTER TABLE flow_keys ADD COLUMN state TEXT;
INSERT INTO flow_keys (slot, version, state)
  SELECT key, 1, value FROM projections WHERE name = 'ordering'
  ON CONFLICT (slot) DO UPDATE SET state = excluded.state;
DELETE FROM projections WHERE name = 'ordering';
