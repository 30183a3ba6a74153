-- The agent run ledger (brief 003): read tables, written by projections of the journal in the
-- transaction of each append. Times are ms since the epoch.
CREATE TABLE agent_events (
  id              TEXT COLLATE "C" PRIMARY KEY,
  conversation_id TEXT    NOT NULL,
  user_id         TEXT    NOT NULL,
  source          TEXT    NOT NULL,
  input_type      TEXT    NOT NULL,
  payload         JSONB    NOT NULL,
  idempotency_key TEXT    NOT NULL UNIQUE,
  agent           TEXT    NOT NULL,
  run_id          TEXT    NOT NULL,
  decision        TEXT    NOT NULL,
  status          TEXT    NOT NULL DEFAULT 'pending',
  attempt_count   INTEGER NOT NULL DEFAULT 0,
  available_at    BIGINT NOT NULL,
  last_error      TEXT,
  created_at      BIGINT NOT NULL,
  updated_at      BIGINT NOT NULL
);
CREATE INDEX agent_events_status ON agent_events (status, available_at);
CREATE INDEX agent_events_conversation ON agent_events (conversation_id, created_at DESC);
CREATE INDEX agent_events_user ON agent_events (user_id, created_at DESC);
CREATE INDEX agent_events_run ON agent_events (run_id);

CREATE TABLE agent_runs (
  id              TEXT COLLATE "C" PRIMARY KEY,
  event_id        TEXT REFERENCES agent_events (id),
  conversation_id TEXT,
  user_id         TEXT,
  agent           TEXT    NOT NULL,
  status          TEXT    NOT NULL,
  graph_version   TEXT    NOT NULL DEFAULT 'v1',
  input_class     TEXT    NOT NULL,
  started_at      BIGINT,
  ended_at        BIGINT,
  failure_reason  TEXT,
  created_at      BIGINT NOT NULL,
  updated_at      BIGINT NOT NULL
);
CREATE INDEX agent_runs_conversation ON agent_runs (conversation_id, id);
CREATE INDEX agent_runs_user ON agent_runs (user_id, id);
CREATE INDEX agent_runs_status ON agent_runs (status, id);

CREATE TABLE agent_steps (
  id              TEXT COLLATE "C" PRIMARY KEY,
  run_id          TEXT    NOT NULL REFERENCES agent_runs (id),
  node            TEXT    NOT NULL,
  seq             INTEGER NOT NULL,
  attempt         INTEGER NOT NULL,
  status          TEXT    NOT NULL,
  input_snapshot  JSONB,
  output_snapshot JSONB,
  error           TEXT,
  latency_ms      INTEGER,
  created_at      BIGINT NOT NULL,
  updated_at      BIGINT NOT NULL,
  UNIQUE (run_id, seq, attempt)
);

CREATE TABLE agent_tool_calls (
  id                       TEXT COLLATE "C" PRIMARY KEY,
  run_id                   TEXT    NOT NULL REFERENCES agent_runs (id),
  external_idempotency_key TEXT    NOT NULL UNIQUE,
  node                     TEXT,
  seq                      INTEGER,
  tool_name                TEXT    NOT NULL,
  risk_level               TEXT    NOT NULL,
  input                    JSONB    NOT NULL,
  output                   JSONB,
  status                   TEXT    NOT NULL,
  error                    TEXT,
  attempts                 INTEGER NOT NULL DEFAULT 0,
  started_at               BIGINT,
  ended_at                 BIGINT,
  approval_status          TEXT,
  approval_by              TEXT,
  approval_reason          TEXT,
  approval_expires_at      BIGINT,
  decided_at               BIGINT,
  created_at               BIGINT NOT NULL,
  updated_at               BIGINT NOT NULL
);
CREATE INDEX agent_tool_calls_run ON agent_tool_calls (run_id, seq);
CREATE INDEX agent_tool_calls_approval ON agent_tool_calls (approval_status, id) WHERE approval_status IS NOT NULL;

CREATE TABLE agent_checkpoints (
  id         TEXT PRIMARY KEY,
  run_id     TEXT    NOT NULL REFERENCES agent_runs (id),
  node       TEXT    NOT NULL,
  seq        INTEGER NOT NULL,
  state      JSONB    NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (run_id, seq)
);
