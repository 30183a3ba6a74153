-- rl_task_complete_all (090) says which queues to wake: those where a completed task's ordering
-- key has another task ready, the key's next, claimable now. Before, every completion of a keyed
-- task woke its queue's workers in every process, and each of them sent a claim; a run's pass
-- that ends its run (the common case) has no next.
DROP FUNCTION rl_task_complete_all(text[], text[], jsonb);
CREATE FUNCTION rl_task_complete_all(p_ids text[], p_tokens text[], p_results jsonb) RETURNS SETOF text
  LANGUAGE plpgsql AS $$
DECLARE
  completed bigint;
  unblocked text[];
BEGIN
  WITH now AS MATERIALIZED (SELECT rl_now_ms() AS ms),
  up AS (
    UPDATE tasks t SET state = 'completed', result = i.result, lease_token = NULL, lease_expires_at = NULL, updated_at = (SELECT ms FROM now)
    FROM ROWS FROM (unnest(p_ids), unnest(p_tokens), jsonb_array_elements(p_results)) AS i(id, token, result)
    WHERE t.id = i.id AND t.lease_token = i.token AND t.state = 'running' RETURNING t.queue, t.ordering_key
  )
  SELECT count(*), array_agg(DISTINCT up.queue) FILTER (WHERE up.ordering_key IS NOT NULL AND EXISTS (
      SELECT 1 FROM tasks o WHERE o.queue = up.queue AND o.ordering_key = up.ordering_key AND o.ordering_key IS NOT NULL AND o.state = 'ready'))
    INTO completed, unblocked FROM up;
  IF completed < cardinality(p_ids) THEN
    RAISE EXCEPTION 'a task this write completes is no longer held' USING ERRCODE = 'RL410';
  END IF;
  RETURN QUERY SELECT unnest(coalesce(unblocked, '{}'));
END $$;
