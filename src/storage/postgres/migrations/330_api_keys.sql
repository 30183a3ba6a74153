-- API keys with roles (issue 45). Only the sha256 of a secret is stored; `prefix` (its first 8 characters) is what
-- listings show. `namespace` is '*' (all) or one namespace: kept now, enforced by the namespaces slice. A key is
-- revoked, never deleted, so the names and prefixes of old keys stay explainable.
CREATE TABLE api_keys (
  id           text COLLATE "C" PRIMARY KEY,
  name         text COLLATE "C" NOT NULL UNIQUE,
  issued_to    text,
  prefix       text NOT NULL,
  hash         text COLLATE "C" NOT NULL UNIQUE,
  roles        text[] NOT NULL,
  namespace    text COLLATE "C" NOT NULL DEFAULT 'default',
  created_at   bigint NOT NULL DEFAULT rl_now_ms(),
  revoked_at   bigint,
  last_used_at bigint
);
