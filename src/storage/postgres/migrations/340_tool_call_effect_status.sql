-- An effect tool's call whose outcome was not recorded (issue 46: a crash between the call and its record) is
-- `unknown` until its reconcile or a person settles it; found to have happened, it is `reconciled`
-- (src/agents/ledger-lifecycle.ts). The new check only widens the old one, which every row already passed, so it is
-- added NOT VALID (no scan under the exclusive lock) and validated right after (a lock that lets writes go on).
ALTER TABLE agent_tool_calls DROP CONSTRAINT agent_tool_calls_status_values;
ALTER TABLE agent_tool_calls ADD CONSTRAINT agent_tool_calls_status_values
  CHECK (status IN ('started', 'ok', 'error', 'timeout', 'blocked', 'unknown', 'reconciled')) NOT VALID;
ALTER TABLE agent_tool_calls VALIDATE CONSTRAINT agent_tool_calls_status_values;
