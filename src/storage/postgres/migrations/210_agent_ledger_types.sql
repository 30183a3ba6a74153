-- The agent ledger as people query it (issue 43): times as timestamptz, the enumerated columns
-- checked against the values the code writes (src/agents/ledger-lifecycle.ts, src/storage/ledger.ts),
-- and a run that came through intake (it has an event_id) always naming its conversation and user.
--
-- Views, not generated columns: a view costs nothing on write, while a STORED generated column
-- rewrites each table under an exclusive lock when added and is computed again on every update
-- (agent_events and agent_runs are updated several times per run). Each view lists every column
-- of its table, with each time column (ms since the epoch) under the same name as timestamptz.
CREATE VIEW agent_events_v AS
  SELECT id, conversation_id, user_id, source, input_type, payload, idempotency_key, agent, run_id, decision, status, attempt_count,
         to_timestamp(available_at / 1000.0) AS available_at, last_error, to_timestamp(created_at / 1000.0) AS created_at, to_timestamp(updated_at / 1000.0) AS updated_at
  FROM agent_events;
CREATE VIEW agent_runs_v AS
  SELECT id, event_id, conversation_id, user_id, agent, status, graph_version, input_class,
         to_timestamp(started_at / 1000.0) AS started_at, to_timestamp(ended_at / 1000.0) AS ended_at, failure_reason, retry_of,
         to_timestamp(created_at / 1000.0) AS created_at, to_timestamp(updated_at / 1000.0) AS updated_at
  FROM agent_runs;
CREATE VIEW agent_steps_v AS
  SELECT id, run_id, node, seq, attempt, status, input_snapshot, output_snapshot, error, latency_ms,
         to_timestamp(created_at / 1000.0) AS created_at, to_timestamp(updated_at / 1000.0) AS updated_at
  FROM agent_steps;
CREATE VIEW agent_tool_calls_v AS
  SELECT id, run_id, external_idempotency_key, node, seq, tool_name, risk_level, input, output, status, error, attempts,
         to_timestamp(started_at / 1000.0) AS started_at, to_timestamp(ended_at / 1000.0) AS ended_at,
         approval_status, approval_by, approval_reason, to_timestamp(approval_expires_at / 1000.0) AS approval_expires_at, to_timestamp(decided_at / 1000.0) AS decided_at,
         to_timestamp(created_at / 1000.0) AS created_at, to_timestamp(updated_at / 1000.0) AS updated_at
  FROM agent_tool_calls;
CREATE VIEW agent_checkpoints_v AS
  SELECT id, run_id, node, seq, state, to_timestamp(created_at / 1000.0) AS created_at
  FROM agent_checkpoints;

-- NOT VALID: adding them checks no existing row, so the exclusive lock is brief; migration 211
-- validates them in a transaction of its own, under a lock that lets writes go on. Input types
-- (`text`, `audio`, …) and input classes are the caller's words, so they are not checked.
ALTER TABLE agent_events ADD CONSTRAINT agent_events_status_values CHECK (status IN ('pending', 'processing', 'done', 'failed')) NOT VALID;
ALTER TABLE agent_events ADD CONSTRAINT agent_events_decision_values CHECK (decision IN ('queued', 'coalesced')) NOT VALID;
ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_status_values CHECK (status IN ('pending', 'running', 'waiting', 'sleeping', 'success', 'failed')) NOT VALID;
-- Intake (agentEventReceive, a redrive) starts a run with its event's id, conversation and user
-- together (SessionService.ledgerData); a run started directly has none of the three.
ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_intake_names_conversation CHECK (event_id IS NULL OR (conversation_id IS NOT NULL AND user_id IS NOT NULL)) NOT VALID;
ALTER TABLE agent_steps ADD CONSTRAINT agent_steps_status_values CHECK (status IN ('started', 'ok', 'error', 'skipped')) NOT VALID;
ALTER TABLE agent_tool_calls ADD CONSTRAINT agent_tool_calls_status_values CHECK (status IN ('started', 'ok', 'error', 'timeout', 'blocked')) NOT VALID;
ALTER TABLE agent_tool_calls ADD CONSTRAINT agent_tool_calls_risk_level_values CHECK (risk_level IN ('low', 'medium', 'high')) NOT VALID;
ALTER TABLE agent_tool_calls ADD CONSTRAINT agent_tool_calls_approval_status_values CHECK (approval_status IN ('pending', 'approved', 'rejected', 'expired')) NOT VALID;
