-- Projection keys are listed in byte order (like SQLite's BINARY) so a key prefix is an index range
-- whatever the database's default collation is.
ALTER TABLE projections ALTER COLUMN key TYPE TEXT COLLATE "C";
