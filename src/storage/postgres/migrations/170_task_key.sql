-- A task has one key, its `id`. Every transition of a task is a non-HOT update (its state is in
-- the partial indexes' predicates), so each one entered the new row into both unique indexes,
-- `seq`'s (the primary key) and `id`'s, though no statement finds a task by `seq` any more: the
-- claim (below), the expiry (tasks.ts) and retention's deletion (maintenance.ts) find their rows
-- by `id`. `seq` still orders the tasks of a queue (tasks_ready, tasks_ordering). A process of the
-- previous version finds an expired lease and a task to delete by `seq`: a scan of the table,
-- slower, not wrong, until it is replaced.

-- 080's claim, its rows found by id.
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
    SELECT t.id FROM tasks t
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
  FROM c WHERE tasks.id = c.id
  RETURNING tasks.*;
END $$;

-- `id` becomes the primary key (logical replication, for one, needs a table's key): its index is
-- built anew, once, under the migration's lock.
ALTER TABLE tasks DROP CONSTRAINT tasks_pkey, DROP CONSTRAINT tasks_id_key, ADD CONSTRAINT tasks_pkey PRIMARY KEY (id);
