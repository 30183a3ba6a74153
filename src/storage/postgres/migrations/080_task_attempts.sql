-- The write path (issue 13): a claim writes no journal event; the event that ends an attempt
-- (task.completed, task.failed, task.dead, task.lease_expired) carries its worker and start.
-- claimed_at is that start (set by each claim, kept after it); worker_id now keeps the worker of
-- the last attempt after it ended (it named only the holder of a running task before).
ALTER TABLE tasks ADD COLUMN claimed_at bigint;

-- The claim commits durably again. It asked for an asynchronous commit (001, 070) when it was a
-- transaction of its own; in the group commit it shares its transaction with task completions
-- and run steps, whose callers are told "done" only once they are on disk. rl_task_claim (001)
-- has not been called since 070.
DROP FUNCTION rl_task_claim(text, integer, bigint, text, text);

CREATE OR REPLACE FUNCTION rl_task_claim_tagged(p_queue text, p_limit integer, p_lease_ms bigint, p_worker text, p_token text, p_tags text[])
RETURNS SETOF tasks LANGUAGE plpgsql AS $$
DECLARE
  v_keyed boolean;
  v_now bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM pauses WHERE kind = 'queue' AND name = p_queue) THEN
    RETURN;
  END IF;
  v_keyed := EXISTS (SELECT 1 FROM tasks WHERE queue = p_queue AND ordering_key IS NOT NULL AND state = 'ready');
  IF v_keyed THEN
    PERFORM pg_advisory_xact_lock(1919053, hashtext(p_queue));
  END IF;
  v_now := rl_now_ms();
  RETURN QUERY
  WITH c AS (
    SELECT t.seq FROM tasks t
    WHERE t.queue = p_queue AND t.state = 'ready' AND t.run_at <= v_now
      AND (t.tag IS NULL OR p_tags IS NULL OR t.tag = ANY (p_tags))
      AND (t.tag IS NULL OR rl_task_unpaused(t.queue, t.tag))
      AND (t.ordering_key IS NULL OR (v_keyed AND NOT EXISTS (
        SELECT 1 FROM tasks o
        WHERE o.queue = t.queue AND o.ordering_key = t.ordering_key AND o.ordering_key IS NOT NULL
          AND o.state IN ('ready', 'running') AND (o.state = 'running' OR o.seq < t.seq))))
    ORDER BY t.priority DESC, t.run_at, t.seq
    LIMIT p_limit
    FOR UPDATE SKIP LOCKED
  )
  UPDATE tasks SET state = 'running', attempts = tasks.attempts + 1, lease_token = p_token,
    lease_expires_at = v_now + p_lease_ms, worker_id = p_worker, updated_at = v_now, claimed_at = v_now
  FROM c WHERE tasks.seq = c.seq
  RETURNING tasks.*;
END $$;
