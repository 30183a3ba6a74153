-- Fairness for tasks (issue 40): within a queue (and within a concurrency key), waiting tasks of
-- different fairness groups take turns, so a group with 10,000 waiting does not starve one with 10.
--
-- A task may name its group (`fair_group`). As it is enqueued it gets a turn, `fair_at`: one
-- millisecond after its group's last waiting task, and never before the round after the queue's
-- first waiting turn (a group with nothing waiting joins the next round; `fairTurn` in
-- src/storage/tasks.ts). Start-time fair queuing with a unit cost of 1 ms: groups interleave, one
-- task each. A retried task keeps its turn. The claim still orders by `sort_at`, now the turn in
-- place of the run-at for a task that has one, so it reads its tasks off the same index as before.
ALTER TABLE tasks ADD COLUMN fair_group text COLLATE "C", ADD COLUMN fair_at bigint;

DROP INDEX tasks_ready;
ALTER TABLE tasks DROP COLUMN sort_at;
ALTER TABLE tasks ADD COLUMN sort_at bigint
  GENERATED ALWAYS AS (coalesce(fair_at, run_at) - priority::bigint * 10000) STORED;
CREATE INDEX tasks_ready ON tasks (queue, sort_at, seq) WHERE state = 'ready';
-- A group's last turn, and the queue's oldest turn, at enqueue: only tasks with a group pay for these.
CREATE INDEX tasks_fair ON tasks (queue, fair_group, fair_at) WHERE fair_group IS NOT NULL AND state = 'ready';
CREATE INDEX tasks_fair_front ON tasks (queue, fair_at) WHERE fair_group IS NOT NULL AND state = 'ready';
-- A concurrency key's claimable tasks in claim order (turn, priority), not only arrival.
CREATE INDEX tasks_concurrency_order ON tasks (queue, concurrency_key, sort_at, seq)
  WHERE concurrency_key IS NOT NULL AND state = 'ready';

-- 220's claim, a concurrency key's claimable tasks taken in `sort_at` order (turn, aged priority)
-- instead of arrival, so fairness holds within a key's limit too.
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
      AND (t.tag IS NULL OR rl_task_unpaused(t.queue, t.tag))
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
