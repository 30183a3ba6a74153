-- The audit trail: one row per privileged request (every non-GET but /healthz and /callbacks), refused ones too.
-- Never a request body: only who, what, on which target, from where, and the HTTP status it got.
CREATE TABLE audit (
  seq       bigserial PRIMARY KEY,
  at        bigint   NOT NULL DEFAULT rl_now_ms(),
  actor     text COLLATE "C",
  issued_to text,
  method    text     NOT NULL,
  route     text COLLATE "C" NOT NULL,
  target    text,
  address   text,
  outcome   integer  NOT NULL,
  detail    text
);
CREATE INDEX audit_at ON audit (at);
