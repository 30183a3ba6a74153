-- Flow control in the claim (issue 40): keyed concurrency, queue limits and priority aging.
--
-- A task may name a concurrency key and its limit: at most `concurrency_limit` tasks of that key
-- (per queue) run at once, the rest wait in arrival order. An ordering key is the case limit 1.
ALTER TABLE tasks ADD COLUMN concurrency_key text COLLATE "C", ADD COLUMN concurrency_limit integer,
  -- Priority aging: the claim takes tasks by `sort_at`, a task's run-at moved 10 s earlier per point
  -- of priority (AGING_STEP_MS in src/storage/tasks.ts). Within a priority it is FIFO; between two
  -- priorities the higher goes first unless the lower has waited longer than 10 s per point of
  -- difference, so low priority is delayed, never starved. A plain column the index holds, not an
  -- expression in ORDER BY: the claim still reads its tasks off the index in order. Stored, so the
  -- table is rewritten once, under this migration's lock.
  ADD COLUMN sort_at bigint GENERATED ALWAYS AS (run_at - priority::bigint * 10000) STORED;

DROP INDEX tasks_ready;
CREATE INDEX tasks_ready ON tasks (queue, sort_at, seq) WHERE state = 'ready';
-- Only tasks with a key pay for this index (a run's passes have none).
CREATE INDEX tasks_concurrency ON tasks (queue, concurrency_key, state, seq, run_at)
  WHERE concurrency_key IS NOT NULL AND state IN ('ready', 'running');

-- A queue's limit of running tasks across every process; read by every claim of the queue, so a
-- change takes effect at the next claim.
CREATE TABLE queue_limits (
  queue       text COLLATE "C" PRIMARY KEY,
  concurrency integer NOT NULL CHECK (concurrency > 0),
  updated_at  bigint  NOT NULL
);

-- 170's claim with the limits. A claim that must count what runs (an ordering key's, a concurrency
-- key's, the queue's) does so under the advisory lock per queue, taken before the counting statement
-- takes its snapshot (see rl_task_claim in 001): each such claimer sees the claims committed before
-- it, so two can never both fill the last slot. Of a concurrency key, the claimable tasks are its
-- oldest due ones, as many as its free slots (the limit of its oldest waiting task, less what runs):
-- found per key (`v_slots`), a few index probes per key waiting, not per task. Measured, 1,000 tasks
-- waiting under 5 saturated keys: a claim read them all with two counts per task, 62-85 ms.
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
    -- each key with a task waiting (skipping from key to key on the index), and its oldest due tasks
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
        AND o.state IN ('ready', 'running') AND o.state = 'ready' AND o.run_at <= v_now
      ORDER BY o.seq
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

-- 160's completion; `r_next` is also true when the completed task freed a slot another waits for:
-- a ready task of its concurrency key, or of its queue when the queue has a limit.
CREATE OR REPLACE FUNCTION rl_task_complete(p_ids text[], p_tokens text[], p_results jsonb)
  RETURNS TABLE (r_id text, r_queue text, r_ordering_key text, r_ord bigint, r_next boolean)
  LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  WITH now AS MATERIALIZED (SELECT rl_now_ms() AS ms),
  up AS (
    UPDATE tasks t SET state = 'completed', result = i.result, lease_token = NULL, lease_expires_at = NULL, updated_at = (SELECT ms FROM now)
    FROM ROWS FROM (unnest(p_ids), unnest(p_tokens), jsonb_array_elements(p_results)) WITH ORDINALITY AS i(id, token, result, ord)
    WHERE t.id = i.id AND t.lease_token = i.token AND t.state = 'running'
    RETURNING t.id, t.queue, t.ordering_key, t.concurrency_key, t.attempts, t.worker_id, t.claimed_at, i.ord
  ),
  ev AS (
    INSERT INTO events (stream_id, version, type, data, metadata, created_at)
    SELECT 'task:' || up.id, coalesce((SELECT max(e.version) FROM events e WHERE e.stream_id = 'task:' || up.id), 0) + 1, 'task.completed',
      jsonb_build_object('attempt', up.attempts, 'workerId', up.worker_id, 'claimedAt', up.claimed_at, 'state', 'completed'), '{}', (SELECT ms FROM now)
    FROM up ORDER BY up.ord
  )
  SELECT up.id, up.queue, up.ordering_key, up.ord,
    (up.ordering_key IS NOT NULL AND EXISTS (SELECT 1 FROM tasks o
      WHERE o.queue = up.queue AND o.ordering_key = up.ordering_key AND o.ordering_key IS NOT NULL AND o.state = 'ready'))
    OR (up.concurrency_key IS NOT NULL AND EXISTS (SELECT 1 FROM tasks o
      WHERE o.queue = up.queue AND o.concurrency_key = up.concurrency_key AND o.concurrency_key IS NOT NULL AND o.state = 'ready'))
    OR (EXISTS (SELECT 1 FROM queue_limits l WHERE l.queue = up.queue)
      AND EXISTS (SELECT 1 FROM tasks o WHERE o.queue = up.queue AND o.state = 'ready'))
  FROM up;
END $$;
