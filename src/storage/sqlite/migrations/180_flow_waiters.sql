-- Runs waiting for a slot of a keyed concurrency limit (issue 40), as on PostgreSQL (migration 240 there): one row
-- each, next in line by highest `priority` then lowest `seq`, `grp` the fairness group, `data` JSON.
CREATE TABLE flow_waiters (
  slot     TEXT NOT NULL,
  run_id   TEXT NOT NULL,
  priority INTEGER NOT NULL,
  seq      REAL NOT NULL,
  grp      TEXT,
  data     TEXT NOT NULL,
  PRIMARY KEY (slot, run_id)
);
CREATE INDEX flow_waiters_next ON flow_waiters (slot, priority DESC, seq);
CREATE INDEX flow_waiters_group ON flow_waiters (slot, grp, priority DESC, seq);

-- A key's lock and version (as on PostgreSQL).
CREATE TABLE flow_keys (
  slot    TEXT PRIMARY KEY,
  version INTEGER NOT NULL
);
