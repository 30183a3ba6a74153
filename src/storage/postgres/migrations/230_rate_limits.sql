-- Named rate limits (issue 40). A limit is `limit_count` units per `period_ms`; each (name, key) is one
-- bucket kept as GCRA's theoretical arrival time `tat` (ms, fractional: a unit costs period/limit),
-- read FOR UPDATE and written in the taker's transaction, on the database clock (rl_now_ms), so takes
-- from every process are exact. `rate_takes` records each take's outcome under the take's id, in the
-- transaction that updated the buckets, so a run that asks again after a crash gets the same answer.
CREATE TABLE rate_limits (
  name        text COLLATE "C" PRIMARY KEY,
  limit_count integer NOT NULL CHECK (limit_count > 0),
  period_ms   bigint  NOT NULL CHECK (period_ms > 0),
  key_expr    text,
  created_at  bigint  NOT NULL DEFAULT rl_now_ms(),
  updated_at  bigint  NOT NULL DEFAULT rl_now_ms()
);

CREATE TABLE rate_buckets (
  name text COLLATE "C" NOT NULL,
  key  text COLLATE "C" NOT NULL,
  tat  double precision NOT NULL,
  PRIMARY KEY (name, key)
);

CREATE TABLE rate_takes (
  take_id    text COLLATE "C" PRIMARY KEY,
  ok         boolean NOT NULL,
  retry_at   bigint,
  name       text,
  key        text,
  created_at bigint NOT NULL DEFAULT rl_now_ms()
);
CREATE INDEX rate_takes_created ON rate_takes (created_at);
