-- Validates migration 210's checks apart from adding them: each migration commits on its own, so
-- the exclusive lock of ADD CONSTRAINT is already released, and VALIDATE scans the existing rows
-- under SHARE UPDATE EXCLUSIVE, which lets the ledger's writes go on while a big table is read.
ALTER TABLE agent_events VALIDATE CONSTRAINT agent_events_status_values;
ALTER TABLE agent_events VALIDATE CONSTRAINT agent_events_decision_values;
ALTER TABLE agent_runs VALIDATE CONSTRAINT agent_runs_status_values;
ALTER TABLE agent_runs VALIDATE CONSTRAINT agent_runs_intake_names_conversation;
ALTER TABLE agent_steps VALIDATE CONSTRAINT agent_steps_status_values;
ALTER TABLE agent_tool_calls VALIDATE CONSTRAINT agent_tool_calls_status_values;
ALTER TABLE agent_tool_calls VALIDATE CONSTRAINT agent_tool_calls_risk_level_values;
ALTER TABLE agent_tool_calls VALIDATE CONSTRAINT agent_tool_calls_approval_status_values;
