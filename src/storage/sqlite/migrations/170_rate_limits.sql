-- Named rate limits (issue 40), as on PostgreSQL (migration 230 there). A limit is `limit_count` units per
-- `period_ms`; each (name, key) is one bucket kept as GCRA's theoretical arrival time `tat` (ms, fractional:
-- a unit costs period/limit). `rate_takes` records each take's outcome under the take's id, in the
-- transaction that updated the buckets, so a run that asks again after a crash gets the same answer.
CREATE TABLE rate_limits (
  name        TEXT PRIMARY KEY,
  limit_count INTEGER NOT NULL CHECK (limit_count > 0),
  period_ms   INTEGER NOT NULL CHECK (period_ms > 0),
  key_expr    TEXT,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);

CREATE TABLE rate_buckets (
  name TEXT NOT NULL,
  key  TEXT NOT NULL,
  tat  REAL NOT NULL,
  PRIMARY KEY (name, key)
);

CREATE TABLE rate_takes (
  take_id    TEXT PRIMARY KEY,
  ok         INTEGER NOT NULL,
  retry_at   INTEGER,
  name       TEXT,
  key        TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX rate_takes_created ON rate_takes (created_at);
