-- Runs that live for months (issue 16).

-- The version a task needs of the worker that claims it (`<workflow>@<version>` for a run's pass);
-- NULL: any worker of the queue. A worker claims only the tags it has, so a run whose code
-- version no worker has waits instead of failing.
ALTER TABLE tasks ADD COLUMN tag text COLLATE "C";

-- Values too big for an event: content-addressed chunks, shared by every value that holds them.
CREATE TABLE blob_chunks (
  hash       text COLLATE "C" PRIMARY KEY,
  data       bytea  NOT NULL,
  size       integer NOT NULL,
  created_at bigint NOT NULL DEFAULT rl_now_ms()
);

-- Who holds a chunk (a run): deleting the owner deletes the chunks no other owner holds.
CREATE TABLE blob_owners (
  owner text COLLATE "C" NOT NULL,
  hash  text COLLATE "C" NOT NULL,
  PRIMARY KEY (owner, hash)
);
CREATE INDEX blob_owners_hash ON blob_owners (hash);

-- Paused queues (no task of theirs is claimed) and workflows (no pass of their runs is claimed).
CREATE TABLE pauses (
  kind       text COLLATE "C" NOT NULL,
  name       text COLLATE "C" NOT NULL,
  paused_by  text   NOT NULL,
  reason     text   NOT NULL,
  created_at bigint NOT NULL DEFAULT rl_now_ms(),
  PRIMARY KEY (kind, name)
);

-- True when no pause holds the task back: its queue is not paused, nor the workflow its tag names.
CREATE FUNCTION rl_task_unpaused(p_queue text, p_tag text) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT NOT EXISTS (
    SELECT 1 FROM pauses p
    WHERE (p.kind = 'queue' AND p.name = p_queue)
       OR (p.kind = 'workflow' AND p_tag IS NOT NULL AND left(p_tag, length(p.name) + 1) = p.name || '@'))
$$;

-- rl_task_claim (001) with two more conditions: a tagged task goes only to a worker that has its
-- tag (p_tags NULL: any), and nothing paused is claimed. The locking is unchanged; see 001.
CREATE FUNCTION rl_task_claim_tagged(p_queue text, p_limit integer, p_lease_ms bigint, p_worker text, p_token text, p_tags text[])
RETURNS SETOF tasks LANGUAGE plpgsql AS $$
DECLARE
  v_keyed boolean;
  v_now bigint;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
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
    lease_expires_at = v_now + p_lease_ms, worker_id = p_worker, updated_at = v_now
  FROM c WHERE tasks.seq = c.seq
  RETURNING tasks.*;
END $$;
