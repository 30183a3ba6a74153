-- (The (type, position) index subscriptions filtered by type read through exists since 001.)

-- The processes holding leases, one row each, its heartbeat every second. Leases name their process
-- (worker ids and subscription owners start with `<process id>:`), so the leases of a process whose
-- heartbeat stopped, or whose pid is gone on this host, are ended at once, not when each lease runs out.
CREATE TABLE processes (
  id           TEXT PRIMARY KEY,
  host         TEXT    NOT NULL,
  pid          INTEGER NOT NULL,
  pid_start    TEXT,
  started_at   INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX processes_heartbeat ON processes (heartbeat_at);
