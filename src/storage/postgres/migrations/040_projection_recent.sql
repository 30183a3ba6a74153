-- Listing a projection newest first (the run list of every kind: ids of different kinds do not sort
-- by time together), optionally by status: each page is a range of one of these indexes. jsonb
-- numbers compare as numbers; no cast, so a value without a numeric createdAt is still stored.
CREATE INDEX projections_created ON projections (name, (value -> 'createdAt'), key);
CREATE INDEX projections_status_created ON projections (name, (value ->> 'status'), (value -> 'createdAt'), key);
-- statistics for the new expressions now, rather than at autovacuum's next analyze
ANALYZE projections;
