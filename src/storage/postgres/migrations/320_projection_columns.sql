-- Projection rows HOT-updated (issue 48). 040 indexed expressions of `value` (its createdAt and status), so
-- every update of a row changed an indexed column in PostgreSQL's eyes and wrote a new entry in all three
-- indexes: a 1-step run's view is written three times, nine index entries. Stored columns computed from
-- `value` are indexed instead: an update that leaves createdAt and status as they were (a run's steps) changes
-- no indexed column, and with room left on the page (fillfactor) the new version stays on it, HOT, no index
-- entry. The listings read the columns (projections.ts). Adding the columns rewrites the table once, under
-- this migration's lock.
ALTER TABLE projections
  ADD COLUMN created jsonb GENERATED ALWAYS AS (value -> 'createdAt') STORED,
  ADD COLUMN status text GENERATED ALWAYS AS (value ->> 'status') STORED;
ALTER TABLE projections SET (fillfactor = 80);

DROP INDEX projections_created;
DROP INDEX projections_status_created;
CREATE INDEX projections_created ON projections (name, created, key);
CREATE INDEX projections_status_created ON projections (name, status, created, key);
ANALYZE projections;
