-- Holds the leases of a batch all or nothing, for a batch that writes after it: RL410 (a
-- `LeaseLostError`) when a lease is no longer held (or two pairs name one task), which fails the
-- statement it travels with and the batch. It locks the rows FOR SHARE and writes nothing: the
-- expiry (FOR UPDATE SKIP LOCKED) passes over a row a batch holds, so no lease ends under a batch
-- that checked it, and heartbeats extend the leases. It
-- replaces rl_task_renew (migration 090), which extended them with every write: a new version of
-- the task row and of each of its index entries per step. rl_task_renew stays for processes of the
-- version before this one.
CREATE FUNCTION rl_task_hold(p_ids text[], p_tokens text[]) RETURNS void
  LANGUAGE plpgsql AS $$
DECLARE
  held bigint;
BEGIN
  SELECT count(DISTINCT h.id) INTO held FROM (
    SELECT t.id FROM tasks t JOIN unnest(p_ids, p_tokens) AS l(id, token) ON t.id = l.id AND t.lease_token = l.token
    WHERE t.state = 'running'
    FOR SHARE OF t
  ) h;
  IF held < cardinality(p_ids) THEN
    RAISE EXCEPTION 'a lease this write needs is no longer held' USING ERRCODE = 'RL410';
  END IF;
END $$;
