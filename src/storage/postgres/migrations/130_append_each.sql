-- Many appends in one statement, each with its own idempotency key: the appends a process makes
-- outside a transaction at the same moment (chat posts, retention's record) commit together
-- (events.ts, eventAppendEach). Each append goes to one stream and expects no version; an append
-- whose key was used before (rows with ok false) writes nothing, the others are written, in the
-- order given within a stream. Streams are locked in sorted order, as by rl_event_append.
CREATE FUNCTION rl_event_append_each(p_keys text[], p_streams text[], p_counts bigint[], p_types text[], p_data jsonb, p_metadata jsonb)
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
    SELECT t.stream_id, t.n FROM totals t ORDER BY t.stream_id
    ON CONFLICT (stream_id) DO UPDATE SET version = s.version + excluded.version
    RETURNING s.stream_id, s.version
  ),
  ranges AS MATERIALIZED (
    SELECT l.append, l.key, l.stream_id, l.first, l.n, up.version - t.n + l.before AS start
    FROM live l JOIN totals t ON t.stream_id = l.stream_id JOIN up ON up.stream_id = l.stream_id
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

-- On its generic plan, as rl_event_append (110_append_plan.sql).
ALTER FUNCTION rl_event_append_each(text[], text[], bigint[], text[], jsonb, jsonb) SET plan_cache_mode = force_generic_plan;
