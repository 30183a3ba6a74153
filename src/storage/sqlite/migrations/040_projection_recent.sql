-- Listing a projection newest first (the run list of every kind: ids of different kinds do not sort
-- by time together), optionally by status: each page is a range of one of these indexes.
CREATE INDEX projections_created ON projections (name, json_extract(value, '$.createdAt'), key);
CREATE INDEX projections_status_created ON projections (name, json_extract(value, '$.status'), json_extract(value, '$.createdAt'), key);
