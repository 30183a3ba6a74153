-- A second name a workflow pause holds a task by (issue 47): every stored workflow's executions are runs of the one
-- code workflow `runledger.stored`, so a pause by the tag's workflow would hold all of them. A pass of an execution
-- carries its stored workflow's id in `pause_key`, and the claim refuses it while a pause of kind 'workflow' has that
-- name. Only a filter of the claim (NULL for every other task): the claim reads the same index as before.
ALTER TABLE tasks ADD COLUMN pause_key text COLLATE "C";

-- rl_task_unpaused (070) with the task's pause key.
CREATE FUNCTION rl_task_unpaused(p_queue text, p_tag text, p_pause_key text) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT NOT EXISTS (
    SELECT 1 FROM pauses p
    WHERE (p.kind = 'queue' AND p.name = p_queue)
       OR (p.kind = 'workflow' AND p_tag IS NOT NULL AND left(p_tag, length(p.name) + 1) = p.name || '@')
       OR (p.kind = 'workflow' AND p_pause_key IS NOT NULL AND p.name = p_pause_key))
$$;

-- 280's claim, the pause checked with the task's pause key too. The rest is unchanged.
CREATE OR REPLACE FUNCTION rl_task_claim_tagged(p_queue text, p_limit integer, p_lease_ms bigint, p_worker text, p_token text, p_tags text[])
RETURNS SETOF tasks LANGUAGE plpgsql AS $$
DECLARE
  v_keyed boolean;
  v_limited boolean;
  v_cap integer;
  v_limit integer := p_limit;
  v_slots text[];
  v_now bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM pauses WHERE kind = 'queue' AND name = p_queue) THEN
    RETURN;
  END IF;
  v_keyed := EXISTS (SELECT 1 FROM tasks WHERE queue = p_queue AND ordering_key IS NOT NULL AND state = 'ready');
  v_limited := EXISTS (SELECT 1 FROM tasks WHERE queue = p_queue AND concurrency_key IS NOT NULL AND state = 'ready');
  SELECT concurrency INTO v_cap FROM queue_limits WHERE queue = p_queue;
  IF v_keyed OR v_limited OR v_cap IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(1919053, hashtext(p_queue));
  END IF;
  IF v_cap IS NOT NULL THEN
    v_limit := least(p_limit, v_cap - (SELECT count(*) FROM tasks WHERE queue = p_queue AND state = 'running'));
    IF v_limit <= 0 THEN
      RETURN;
    END IF;
  END IF;
  v_now := rl_now_ms();
  IF v_limited THEN
    WITH RECURSIVE keys AS (
      (SELECT o.concurrency_key AS k FROM tasks o
        WHERE o.queue = p_queue AND o.concurrency_key IS NOT NULL AND o.state IN ('ready', 'running') AND o.state = 'ready'
        ORDER BY o.concurrency_key LIMIT 1)
      UNION ALL
      SELECT (SELECT o.concurrency_key FROM tasks o
        WHERE o.queue = p_queue AND o.concurrency_key > keys.k AND o.concurrency_key IS NOT NULL
          AND o.state IN ('ready', 'running') AND o.state = 'ready'
        ORDER BY o.concurrency_key LIMIT 1)
      FROM keys WHERE keys.k IS NOT NULL
    )
    SELECT coalesce(array_agg(c.id), '{}') INTO v_slots
    FROM keys
    CROSS JOIN LATERAL (SELECT o.concurrency_limit AS l FROM tasks o
      WHERE o.queue = p_queue AND o.concurrency_key = keys.k AND o.concurrency_key IS NOT NULL
        AND o.state IN ('ready', 'running') AND o.state = 'ready'
      ORDER BY o.seq LIMIT 1) lim
    CROSS JOIN LATERAL (SELECT o.id FROM tasks o
      WHERE o.queue = p_queue AND o.concurrency_key = keys.k AND o.concurrency_key IS NOT NULL
        AND o.state = 'ready' AND o.run_at <= v_now
      ORDER BY o.sort_at, o.seq
      LIMIT greatest(0, lim.l - (SELECT count(*) FROM tasks r
        WHERE r.queue = p_queue AND r.concurrency_key = keys.k AND r.concurrency_key IS NOT NULL
          AND r.state IN ('ready', 'running') AND r.state = 'running'))) c
    WHERE keys.k IS NOT NULL;
  END IF;
  RETURN QUERY
  WITH c AS (
    SELECT t.id FROM tasks t
    WHERE t.queue = p_queue AND t.state = 'ready' AND t.run_at <= v_now
      AND (t.tag IS NULL OR p_tags IS NULL OR t.tag = ANY (p_tags))
      AND ((t.tag IS NULL AND t.pause_key IS NULL) OR rl_task_unpaused(t.queue, t.tag, t.pause_key))
      AND (t.ordering_key IS NULL OR (v_keyed AND NOT EXISTS (
        SELECT 1 FROM tasks o
        WHERE o.queue = t.queue AND o.ordering_key = t.ordering_key AND o.ordering_key IS NOT NULL
          AND o.state IN ('ready', 'running') AND (o.state = 'running' OR o.seq < t.seq))))
      AND (t.concurrency_key IS NULL OR (v_limited AND t.id = ANY (v_slots)))
    ORDER BY t.sort_at, t.seq
    LIMIT v_limit
    FOR UPDATE SKIP LOCKED
  )
  UPDATE tasks SET state = 'running', attempts = tasks.attempts + 1, lease_token = p_token,
    lease_expires_at = v_now + p_lease_ms, worker_id = p_worker, updated_at = v_now, claimed_at = v_now
  FROM c WHERE tasks.id = c.id
  RETURNING tasks.*;
END $$;
