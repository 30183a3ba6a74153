-- A concurrency key's state lives in its lock row (issue 40): the lock's answer is the key's newest state (the row
-- lock gives the newest row), and a write of it is a heap-only update of a table with one index, not a new row version
-- of `projections` and its three indexes. The states kept so far in the projection `ordering` move here.
ALTER TABLE flow_keys ADD COLUMN state jsonb;
INSERT INTO flow_keys (slot, version, state)
  SELECT key, 1, value FROM projections WHERE name = 'ordering'
  ON CONFLICT (slot) DO UPDATE SET state = excluded.state;
DELETE FROM projections WHERE name = 'ordering';
