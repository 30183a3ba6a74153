-- The journal: append-only. Rows are never updated or deleted.
CREATE TABLE events (
  position        INTEGER PRIMARY KEY AUTOINCREMENT,
  stream_id       TEXT    NOT NULL,
  version         INTEGER NOT NULL,
  type            TEXT    NOT NULL,
  data            TEXT    NOT NULL,
  metadata        TEXT    NOT NULL,
  idempotency_key TEXT,
  created_at      INTEGER NOT NULL,
  UNIQUE (stream_id, version)
);
CREATE INDEX events_idempotency ON events (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX events_type ON events (type, position);

-- The current version of each stream: the row is the lock that keeps versions gapless.
CREATE TABLE streams (
  stream_id TEXT PRIMARY KEY,
  version   INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE append_keys (
  key        TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Read tables written by projections in the same transaction as the append.
CREATE TABLE projections (
  name       TEXT NOT NULL,
  key        TEXT NOT NULL,
  value      TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (name, key)
) WITHOUT ROWID;

CREATE TABLE subscriptions (
  name             TEXT PRIMARY KEY,
  cursor           TEXT    NOT NULL,
  stream_prefix    TEXT,
  types            TEXT,
  ordered          INTEGER NOT NULL,
  blocked_reason   TEXT,
  owner            TEXT,
  lease_expires_at INTEGER,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
);

CREATE TABLE parked (
  subscription TEXT    NOT NULL,
  position     INTEGER NOT NULL,
  event        TEXT    NOT NULL,
  error        TEXT    NOT NULL,
  attempts     INTEGER NOT NULL,
  status       TEXT    NOT NULL,
  parked_at    INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  PRIMARY KEY (subscription, position)
);

CREATE TABLE tasks (
  seq              INTEGER PRIMARY KEY AUTOINCREMENT,
  id               TEXT    NOT NULL UNIQUE,
  queue            TEXT    NOT NULL,
  state            TEXT    NOT NULL,
  payload          TEXT    NOT NULL,
  idempotency_key  TEXT,
  ordering_key     TEXT,
  run_at           INTEGER NOT NULL,
  priority         INTEGER NOT NULL,
  attempts         INTEGER NOT NULL DEFAULT 0,
  max_attempts     INTEGER NOT NULL,
  lease_token      TEXT,
  lease_expires_at INTEGER,
  worker_id        TEXT,
  last_error       TEXT,
  result           TEXT,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
);
CREATE UNIQUE INDEX tasks_idempotency ON tasks (queue, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX tasks_ready ON tasks (queue, priority DESC, run_at, seq) WHERE state = 'ready';
CREATE INDEX tasks_leases ON tasks (lease_expires_at) WHERE state = 'running';
CREATE INDEX tasks_ordering ON tasks (queue, ordering_key, seq) WHERE ordering_key IS NOT NULL AND state IN ('ready', 'running');
CREATE INDEX tasks_state ON tasks (state, queue, seq);
