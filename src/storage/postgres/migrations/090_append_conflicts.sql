-- The append statement as one function, `rl_event_append`, which events.ts calls for every append
-- (PL/pgSQL keeps its plan per connection, as a prepared statement would). `rl_event_append_checked`
-- runs it for an append with expected versions inside a caller's transaction, without a savepoint's
-- two round trips: in a PL/pgSQL exception block, whose subtransaction undoes everything the append
-- wrote when a version does not match (RL409, raised by rl_check_version before any event row is
-- returned). The mismatch comes back as `conflict` and the caller's transaction goes on, as it does
-- on SQLite. Any other error still aborts the caller's transaction.
CREATE FUNCTION rl_event_append(p_key text, p_streams text[], p_counts bigint[], p_check_streams text[], p_check_offsets bigint[],
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
    SELECT i.stream_id, i.n FROM input i WHERE i.n > 0 AND (SELECT ok FROM go)
    ORDER BY i.stream_id
    ON CONFLICT (stream_id) DO UPDATE SET version = s.version + excluded.version
    RETURNING s.stream_id, s.version
  ),
  base AS MATERIALIZED (
    SELECT i.stream_id,
      coalesce(up.version - i.n, (SELECT c.version FROM streams c WHERE c.stream_id = i.stream_id), 0) AS start
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

CREATE FUNCTION rl_event_append_checked(p_key text, p_streams text[], p_counts bigint[], p_check_streams text[], p_check_offsets bigint[],
    p_check_expected bigint[], p_event_streams text[], p_event_indexes bigint[], p_types text[], p_data jsonb, p_metadata jsonb)
  RETURNS TABLE (r_ok boolean, r_position bigint, r_stream_id text, r_version bigint, r_created_at bigint, r_conflict text)
  LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT a.*, NULL::text FROM rl_event_append(p_key, p_streams, p_counts, p_check_streams, p_check_offsets,
    p_check_expected, p_event_streams, p_event_indexes, p_types, p_data, p_metadata) AS a;
EXCEPTION WHEN SQLSTATE 'RL409' THEN
  RETURN QUERY SELECT NULL::boolean, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint, SQLERRM;
END $$;

-- Renews the leases of a batch all or nothing, for a batch that writes after it: the renewal goes
-- in the message of the batch's next statement (no round trip of its own), and a lease no longer
-- held (or two pairs naming one task) raises RL410, which fails that statement and the batch; the
-- batch is then tried again with the leases renewed first and the writes that lost one left out.
CREATE FUNCTION rl_task_renew(p_ids text[], p_tokens text[], p_lease_ms bigint) RETURNS void
  LANGUAGE plpgsql AS $$
DECLARE
  renewed bigint;
BEGIN
  WITH now AS MATERIALIZED (SELECT rl_now_ms() AS ms),
  up AS (
    UPDATE tasks t SET lease_expires_at = (SELECT ms FROM now) + p_lease_ms, updated_at = (SELECT ms FROM now)
    FROM unnest(p_ids, p_tokens) AS l(id, token)
    WHERE t.id = l.id AND t.lease_token = l.token AND t.state = 'running' RETURNING 1
  )
  SELECT count(*) INTO renewed FROM up;
  IF renewed < cardinality(p_ids) THEN
    RAISE EXCEPTION 'a lease this write needs is no longer held' USING ERRCODE = 'RL410';
  END IF;
END $$;

-- Completes the tasks of a batch all or nothing, as rl_task_renew renews their leases: RL410 when
-- a task is no longer running with its token (or two items name one task).
CREATE FUNCTION rl_task_complete_all(p_ids text[], p_tokens text[], p_results jsonb) RETURNS void
  LANGUAGE plpgsql AS $$
DECLARE
  completed bigint;
BEGIN
  WITH now AS MATERIALIZED (SELECT rl_now_ms() AS ms),
  up AS (
    UPDATE tasks t SET state = 'completed', result = i.result, lease_token = NULL, lease_expires_at = NULL, updated_at = (SELECT ms FROM now)
    FROM ROWS FROM (unnest(p_ids), unnest(p_tokens), jsonb_array_elements(p_results)) AS i(id, token, result)
    WHERE t.id = i.id AND t.lease_token = i.token AND t.state = 'running' RETURNING 1
  )
  SELECT count(*) INTO completed FROM up;
  IF completed < cardinality(p_ids) THEN
    RAISE EXCEPTION 'a task this write completes is no longer held' USING ERRCODE = 'RL410';
  END IF;
END $$;
