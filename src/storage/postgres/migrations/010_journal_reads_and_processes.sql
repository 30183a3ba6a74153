-- Subscriptions filtered by type read through this index in committed order, so events of other
-- types cost them nothing however long the journal grows (see eventReadCommitted).
CREATE INDEX events_type_committed ON events (type, tx_id, position);

-- The processes holding leases, one row each, its heartbeat every second (database clock). Leases
-- name their process (worker ids and subscription owners start with `<process id>:`), so the leases
-- of a process whose heartbeat stopped are ended within seconds, not when each lease runs out.
CREATE TABLE processes (
  id           text COLLATE "C" PRIMARY KEY,
  host         text   NOT NULL,
  pid          integer NOT NULL,
  pid_start    text,
  started_at   bigint NOT NULL,
  heartbeat_at bigint NOT NULL
);
CREATE INDEX processes_heartbeat ON processes (heartbeat_at);
