export type Role = 'admin' | 'developer' | 'operator' | 'approver' | 'viewer' | 'worker';
/** Who made a request: the API key's name (and the person it was issued to); undefined when no auth is set. */
export interface Actor {
  key: string;
  issuedTo?: string;
  roles: Role[];
}
