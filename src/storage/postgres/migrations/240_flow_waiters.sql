-- Runs waiting for a slot of a keyed concurrency limit (issue 40), one row each, so a key's line costs O(1) per start,
-- end and grant however many wait (its small state stays the projection `ordering`). Next in line: highest `priority`,
-- then lowest `seq`; `grp` is the run's fairness group (fairBy), its turns taken by group; `data` what the run takes
-- next once let in.
CREATE TABLE flow_waiters (
  slot     text COLLATE "C" NOT NULL,
  run_id   text COLLATE "C" NOT NULL,
  priority integer NOT NULL,
  seq      double precision NOT NULL,
  grp      text COLLATE "C",
  data     jsonb NOT NULL,
  PRIMARY KEY (slot, run_id)
);
CREATE INDEX flow_waiters_next ON flow_waiters (slot, priority DESC, seq);
CREATE INDEX flow_waiters_group ON flow_waiters (slot, grp, priority DESC, seq);

-- A key's lock and version: a start or end of the key bumps its row (locking it to the end of the transaction), and
-- the version tells whether the state kept in memory is still the newest.
CREATE TABLE flow_keys (
  slot    text COLLATE "C" PRIMARY KEY,
  version bigint NOT NULL
);
