-- A task's stream `task:<id>` has no `streams` row: its version is its newest event's (the
-- `(stream_id, version)` key finds it). Every writer of a task's stream holds the task's row (its
-- transition's UPDATE, or its insert) until it commits, and each statement reads after the one that
-- took the row, so the next version is the newest + 1; an append to it from elsewhere at the same
-- moment fails on the key instead of waiting. A task's completion journals its `task.completed` in
-- the statement that completes it (rl_task_complete), not in an append of its own: per task, no
-- stream row to insert at enqueue, no upsert with its lock record at the end of an attempt.
-- Processes of the previous version keep working: their appends go through these functions.

-- 090's rl_event_append, with a task's stream versioned by its events.
CREATE OR REPLACE FUNCTION rl_event_append(p_key text, p_streams text[], p_counts bigint[], p_check_streams text[], p_check_offsets bigint[],
    p_check_expected bigint[], p_event_streams text[], p_event_indexes bigint[], p_types text[], p_data jsonb, p_metadata jsonb)
  RETURNS TABLE (r_ok boolean, r_position bigint, r_stream_id text, r_version bigint, r_created_at bigint)
  LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  WITH now AS MATERIALIZED (SELECT rl_now_ms() AS ms),
  k AS (
    INSERT INTO append_keys (key, created_at) SELECT p_key, ms FROM now WHERE p_key IS NOT NULL
    ON CONFLICT DO NOTHING RETURNING key
  ),
  go AS MATERIALIZED (SELECT p_key IS NULL OR EXISTS (SELECT 1 FROM k) AS ok),
  input AS MATERIALIZED (SELECT * FROM unnest(p_streams, p_counts) AS i(stream_id, n)),
  up AS (
    INSERT INTO streams AS s (stream_id, version)
    SELECT i.stream_id, i.n FROM input i WHERE i.n > 0 AND left(i.stream_id, 5) <> 'task:' AND (SELECT ok FROM go)
    ORDER BY i.stream_id
    ON CONFLICT (stream_id) DO UPDATE SET version = s.version + excluded.version
    RETURNING s.stream_id, s.version
  ),
  base AS MATERIALIZED (
    SELECT i.stream_id,
      CASE WHEN left(i.stream_id, 5) = 'task:' THEN coalesce((SELECT max(e.version) FROM events e WHERE e.stream_id = i.stream_id), 0)
        ELSE coalesce(up.version - i.n, (SELECT c.version FROM streams c WHERE c.stream_id = i.stream_id), 0) END AS start
    FROM input i LEFT JOIN up ON up.stream_id = i.stream_id
    WHERE (SELECT ok FROM go)
  ),
  checked AS MATERIALIZED (
    SELECT rl_check_version(c.stream_id, b.start + c.off, c.expected) AS ok
    FROM unnest(p_check_streams, p_check_offsets, p_check_expected) AS c(stream_id, off, expected)
    JOIN base b ON b.stream_id = c.stream_id
  ),
  ins AS (
    INSERT INTO events (stream_id, version, type, data, metadata, idempotency_key, created_at)
    SELECT e.stream_id, b.start + e.idx, e.type, e.data, e.meta, p_key, (SELECT ms FROM now)
    FROM ROWS FROM (unnest(p_event_streams), unnest(p_event_indexes), unnest(p_types), jsonb_array_elements(p_data), jsonb_array_elements(p_metadata))
      WITH ORDINALITY AS e(stream_id, idx, type, data, meta, ord)
    JOIN base b ON b.stream_id = e.stream_id
    WHERE (SELECT count(*) FROM checked) >= 0
    ORDER BY e.ord
    RETURNING events.position, events.stream_id, events.version, events.created_at
  )
  SELECT go.ok, ins.position, ins.stream_id, ins.version, ins.created_at FROM go LEFT JOIN ins ON true;
END $$;
ALTER FUNCTION rl_event_append(text, text[], bigint[], text[], bigint[], bigint[], text[], bigint[], text[], jsonb, jsonb)
  SET plan_cache_mode = force_generic_plan;

-- 130's rl_event_append_each, the same way.
CREATE OR REPLACE FUNCTION rl_event_append_each(p_keys text[], p_streams text[], p_counts bigint[], p_types text[], p_data jsonb, p_metadata jsonb)
  RETURNS TABLE (r_append bigint, r_ok boolean, r_position bigint, r_version bigint, r_created_at bigint)
  LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  WITH now AS MATERIALIZED (SELECT rl_now_ms() AS ms),
  a AS MATERIALIZED (
    SELECT i.ord AS append, i.key, i.stream_id, i.n, (sum(i.n) OVER (ORDER BY i.ord) - i.n)::bigint AS first
    FROM unnest(p_keys, p_streams, p_counts) WITH ORDINALITY AS i(key, stream_id, n, ord)
  ),
  k AS (
    INSERT INTO append_keys (key, created_at) SELECT a.key, (SELECT ms FROM now) FROM a WHERE a.key IS NOT NULL
    ON CONFLICT DO NOTHING RETURNING key
  ),
  live AS MATERIALIZED (
    SELECT a.*, (sum(a.n) OVER (PARTITION BY a.stream_id ORDER BY a.append) - a.n)::bigint AS before
    FROM a WHERE a.key IS NULL OR a.key IN (SELECT key FROM k)
  ),
  totals AS MATERIALIZED (SELECT l.stream_id, sum(l.n)::bigint AS n FROM live l GROUP BY l.stream_id),
  up AS (
    INSERT INTO streams AS s (stream_id, version)
    SELECT t.stream_id, t.n FROM totals t WHERE left(t.stream_id, 5) <> 'task:' ORDER BY t.stream_id
    ON CONFLICT (stream_id) DO UPDATE SET version = s.version + excluded.version
    RETURNING s.stream_id, s.version
  ),
  ranges AS MATERIALIZED (
    SELECT l.append, l.key, l.stream_id, l.first, l.n,
      coalesce(up.version - t.n, (SELECT max(e.version) FROM events e WHERE e.stream_id = l.stream_id), 0) + l.before AS start
    FROM live l JOIN totals t ON t.stream_id = l.stream_id LEFT JOIN up ON up.stream_id = l.stream_id
  ),
  ins AS (
    INSERT INTO events (stream_id, version, type, data, metadata, idempotency_key, created_at)
    SELECT r.stream_id, r.start + e.ord - r.first, e.type, e.data, e.meta, r.key, (SELECT ms FROM now)
    FROM ROWS FROM (unnest(p_types), jsonb_array_elements(p_data), jsonb_array_elements(p_metadata)) WITH ORDINALITY AS e(type, data, meta, ord)
    JOIN ranges r ON e.ord > r.first AND e.ord <= r.first + r.n
    ORDER BY e.ord
    RETURNING events.position, events.stream_id, events.version, events.created_at
  )
  SELECT r.append, true, ins.position, ins.version, ins.created_at
  FROM ins JOIN ranges r ON r.stream_id = ins.stream_id AND ins.version > r.start AND ins.version <= r.start + r.n
  UNION ALL
  SELECT a.append, false, NULL::bigint, NULL::bigint, NULL::bigint FROM a WHERE a.key IS NOT NULL AND a.key NOT IN (SELECT key FROM k);
END $$;
ALTER FUNCTION rl_event_append_each(text[], text[], bigint[], text[], jsonb, jsonb) SET plan_cache_mode = force_generic_plan;

-- Completes the tasks still running with their token, and journals each one's `task.completed`
-- (the attempt, its worker, its claim) at its stream's next version, in input order. Returns what it
-- completed, and whether another task of each one's ordering key is ready (its next, claimable now).
CREATE FUNCTION rl_task_complete(p_ids text[], p_tokens text[], p_results jsonb)
  RETURNS TABLE (r_id text, r_queue text, r_ordering_key text, r_ord bigint, r_next boolean)
  LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  WITH now AS MATERIALIZED (SELECT rl_now_ms() AS ms),
  up AS (
    UPDATE tasks t SET state = 'completed', result = i.result, lease_token = NULL, lease_expires_at = NULL, updated_at = (SELECT ms FROM now)
    FROM ROWS FROM (unnest(p_ids), unnest(p_tokens), jsonb_array_elements(p_results)) WITH ORDINALITY AS i(id, token, result, ord)
    WHERE t.id = i.id AND t.lease_token = i.token AND t.state = 'running'
    RETURNING t.id, t.queue, t.ordering_key, t.attempts, t.worker_id, t.claimed_at, i.ord
  ),
  ev AS (
    INSERT INTO events (stream_id, version, type, data, metadata, created_at)
    SELECT 'task:' || up.id, coalesce((SELECT max(e.version) FROM events e WHERE e.stream_id = 'task:' || up.id), 0) + 1, 'task.completed',
      jsonb_build_object('attempt', up.attempts, 'workerId', up.worker_id, 'claimedAt', up.claimed_at, 'state', 'completed'), '{}', (SELECT ms FROM now)
    FROM up ORDER BY up.ord
  )
  SELECT up.id, up.queue, up.ordering_key, up.ord, up.ordering_key IS NOT NULL AND EXISTS (SELECT 1 FROM tasks o
    WHERE o.queue = up.queue AND o.ordering_key = up.ordering_key AND o.ordering_key IS NOT NULL AND o.state = 'ready')
  FROM up;
END $$;

-- rl_task_complete all or nothing, as 140's rl_task_complete_all (RL410 unless every task was
-- completed); the queues where a completed task's key has its next one ready. A new function, so a
-- process of the previous version, which journals its completions itself, keeps calling the old one.
CREATE FUNCTION rl_task_complete_held(p_ids text[], p_tokens text[], p_results jsonb) RETURNS SETOF text
  LANGUAGE plpgsql AS $$
DECLARE
  completed bigint;
  unblocked text[];
BEGIN
  SELECT count(*), array_agg(DISTINCT c.r_queue) FILTER (WHERE c.r_next) INTO completed, unblocked
  FROM rl_task_complete(p_ids, p_tokens, p_results) c;
  IF completed < cardinality(p_ids) THEN
    RAISE EXCEPTION 'a task this write completes is no longer held' USING ERRCODE = 'RL410';
  END IF;
  RETURN QUERY SELECT unnest(coalesce(unblocked, '{}'));
END $$;

-- A process of the previous version still inserts a row for each task it enqueues: a version no
-- longer read (retention deletes it with the stream).
DELETE FROM streams WHERE stream_id >= 'task:' AND stream_id < 'task;';
