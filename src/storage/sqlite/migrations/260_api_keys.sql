-- API keys with roles (issue 45). Only the sha256 of a secret is stored; `prefix` (its first 8 characters) is what
-- listings show. `roles` is a JSON array. `namespace` is '*' (all) or one namespace: kept now, enforced by the
-- namespaces slice. A key is revoked, never deleted, so the names and prefixes of old keys stay explainable.
CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  name         TEXT NOT NULL UNIQUE,
  issued_to    TEXT,
  prefix       TEXT NOT NULL,
  hash         TEXT NOT NULL UNIQUE,
  roles        TEXT NOT NULL,
  namespace    TEXT NOT NULL DEFAULT 'default',
  created_at   INTEGER NOT NULL,
  revoked_at   INTEGER,
  last_used_at INTEGER
);
