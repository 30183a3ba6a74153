-- Every time in the schema is bigint ms from the DATABASE clock, so leases and run-at times agree
-- across machines whose clocks drift. clock_timestamp(), not now(): a long transaction must not
-- stamp a lease with the time it began.
CREATE FUNCTION rl_now_ms() RETURNS bigint LANGUAGE sql AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

-- Identifiers and keys compare bytewise (COLLATE "C"), as in SQLite: ULID order, prefix matches
-- and `id > afterId` pagination do not depend on the server's locale.

-- The journal: append-only. Rows are never updated or deleted.
CREATE TABLE events (
  position        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  stream_id       text COLLATE "C" NOT NULL,
  version         bigint NOT NULL,
  type            text COLLATE "C" NOT NULL,
  data            jsonb  NOT NULL,
  metadata        jsonb  NOT NULL,
  idempotency_key text COLLATE "C",
  created_at      bigint NOT NULL DEFAULT rl_now_ms(),
  -- Positions are taken before commit, so they commit out of order; the writing transaction's id
  -- is what readers order by (see eventReadCommitted).
  tx_id           xid8   NOT NULL DEFAULT pg_current_xact_id(),
  UNIQUE (stream_id, version)
);
CREATE INDEX events_idempotency ON events (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX events_type ON events (type, position);
CREATE INDEX events_committed ON events (tx_id, position);

-- The current version of each stream: the row is the lock that keeps versions gapless.
CREATE TABLE streams (
  stream_id text COLLATE "C" PRIMARY KEY,
  version   bigint NOT NULL
);

CREATE TABLE append_keys (
  key        text COLLATE "C" PRIMARY KEY,
  created_at bigint NOT NULL DEFAULT rl_now_ms()
);

-- Read tables written by projections in the same transaction as the append.
CREATE TABLE projections (
  name       text COLLATE "C" NOT NULL,
  key        text COLLATE "C" NOT NULL,
  value      jsonb  NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (name, key)
);

CREATE TABLE subscriptions (
  name             text COLLATE "C" PRIMARY KEY,
  cursor           text    NOT NULL,
  stream_prefix    text COLLATE "C",
  types            jsonb,
  ordered          boolean NOT NULL,
  blocked_reason   text,
  owner            text,
  lease_expires_at bigint,
  created_at       bigint  NOT NULL,
  updated_at       bigint  NOT NULL
);

CREATE TABLE parked (
  subscription text COLLATE "C" NOT NULL,
  position     bigint NOT NULL,
  event        jsonb  NOT NULL,
  error        text   NOT NULL,
  attempts     integer NOT NULL,
  status       text   NOT NULL,
  parked_at    bigint NOT NULL,
  updated_at   bigint NOT NULL,
  PRIMARY KEY (subscription, position)
);

CREATE TABLE tasks (
  seq              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id               text COLLATE "C" NOT NULL UNIQUE,
  queue            text COLLATE "C" NOT NULL,
  state            text    NOT NULL,
  payload          jsonb   NOT NULL,
  idempotency_key  text COLLATE "C",
  ordering_key     text COLLATE "C",
  run_at           bigint  NOT NULL,
  priority         integer NOT NULL,
  attempts         integer NOT NULL DEFAULT 0,
  max_attempts     integer NOT NULL,
  lease_token      text,
  lease_expires_at bigint,
  worker_id        text,
  last_error       text,
  result           jsonb,
  created_at       bigint  NOT NULL,
  updated_at       bigint  NOT NULL
);
CREATE UNIQUE INDEX tasks_idempotency ON tasks (queue, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX tasks_ready ON tasks (queue, priority DESC, run_at, seq) WHERE state = 'ready';
CREATE INDEX tasks_leases ON tasks (lease_expires_at) WHERE state = 'running';
CREATE INDEX tasks_ordering ON tasks (queue, ordering_key, seq) WHERE ordering_key IS NOT NULL AND state IN ('ready', 'running');
CREATE INDEX tasks_state ON tasks (state, queue, seq);

-- Raised inside the append statement, so a mismatch undoes the whole statement: nothing is written.
-- SQLSTATE RL409 is how the store recognises it and throws ConflictError.
CREATE FUNCTION rl_check_version(p_stream text, p_actual bigint, p_expected bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF p_expected IS NOT NULL AND p_actual <> p_expected THEN
    RAISE EXCEPTION 'stream % is at version %, expected %', p_stream, p_actual, p_expected USING ERRCODE = 'RL409';
  END IF;
  RETURN true;
END $$;

-- Claims tasks. Tasks with an ordering key are claimed only under a transaction-scoped advisory
-- lock per queue, taken BEFORE the claiming query takes its snapshot (in PL/pgSQL each statement
-- of a READ COMMITTED transaction gets a fresh snapshot). So every claimer of keyed tasks sees the
-- committed claims of the ones before it, and "no task of this key is running" cannot be judged on
-- a stale snapshot: without the lock, a claimer that does not yet see an older task (its enqueue
-- or redrive committing late) and one that does can each claim a different task of the same key.
-- Queues with no ready keyed task skip the lock and claim in parallel with SKIP LOCKED.
CREATE FUNCTION rl_task_claim(p_queue text, p_limit integer, p_lease_ms bigint, p_worker text, p_token text)
RETURNS SETOF tasks LANGUAGE plpgsql AS $$
DECLARE
  v_keyed boolean;
  v_now bigint;
BEGIN
  -- A claim needs no disk flush before it returns: if the server loses it in a crash, the task is
  -- simply ready again, and the claimant's completion is refused for its unknown lease token.
  -- A completion commits durably, and flushing its WAL flushes every claim before it.
  PERFORM set_config('synchronous_commit', 'off', true);
  v_keyed := EXISTS (SELECT 1 FROM tasks WHERE queue = p_queue AND ordering_key IS NOT NULL AND state = 'ready');
  IF v_keyed THEN
    PERFORM pg_advisory_xact_lock(1919053, hashtext(p_queue));
  END IF;
  v_now := rl_now_ms();
  RETURN QUERY
  WITH c AS (
    SELECT t.seq FROM tasks t
    WHERE t.queue = p_queue AND t.state = 'ready' AND t.run_at <= v_now
      AND (t.ordering_key IS NULL OR (v_keyed AND NOT EXISTS (
        SELECT 1 FROM tasks o
        WHERE o.queue = t.queue AND o.ordering_key = t.ordering_key AND o.ordering_key IS NOT NULL
          AND o.state IN ('ready', 'running') AND (o.state = 'running' OR o.seq < t.seq))))
    ORDER BY t.priority DESC, t.run_at, t.seq
    LIMIT p_limit
    FOR UPDATE SKIP LOCKED
  )
  UPDATE tasks SET state = 'running', attempts = tasks.attempts + 1, lease_token = p_token,
    lease_expires_at = v_now + p_lease_ms, worker_id = p_worker, updated_at = v_now
  FROM c WHERE tasks.seq = c.seq
  RETURNING tasks.*;
END $$;
