/** The roles a key carries (docs/security.md). */
export type KeyRole = 'admin' | 'developer' | 'operator' | 'approver' | 'viewer' | 'worker';

/** An API key as the API lists it (GET /keys): its prefix, never its secret. */
export interface KeyRecord {
  id: string;
  name: string;
  issued_to: string | null;
  /** The first 8 characters of the secret. */
  prefix: string;
  roles: KeyRole[];
  /** `'*'` for every namespace. */
  namespace: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

/** A key with its secret: the answer to a create or a rotation, the only time the secret is shown. */
export interface KeyWithSecret extends KeyRecord {
  secret: string;
}

/** What POST /keys takes. */
export interface NewKeyRequest {
  name: string;
  issued_to?: string;
  roles: KeyRole[];
  namespace?: string;
}
