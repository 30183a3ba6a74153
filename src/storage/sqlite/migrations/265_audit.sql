-- The audit trail: one row per privileged request (every non-GET but /healthz and /callbacks), refused ones too.
-- Never a request body: only who, what, on which target, from where, and the HTTP status it got.
CREATE TABLE audit (
  seq       INTEGER PRIMARY KEY AUTOINCREMENT,
  at        INTEGER NOT NULL,
  actor     TEXT,
  issued_to TEXT,
  method    TEXT    NOT NULL,
  route     TEXT    NOT NULL,
  target    TEXT,
  address   TEXT,
  outcome   INTEGER NOT NULL,
  detail    TEXT
);
CREATE INDEX audit_at ON audit (at);
