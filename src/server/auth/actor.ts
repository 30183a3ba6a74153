/**
 * The roles a key carries (docs/security.md has the table): `admin` holds every other role, and every role
 * reads (holds `viewer`).
 */
export const ROLES = ['admin', 'developer', 'operator', 'approver', 'viewer', 'worker'] as const;
export type Role = (typeof ROLES)[number];

/**
 * Who made a request: the name of its key (`bootstrap` for RUNLEDGER_TOKEN), the person it was issued to, and its roles.
 * The HTTP app puts it on the Hono context (`c.get('actor')`); it is undefined when the server runs open (no token, no key).
 *
 * @example const actor = c.get('actor'); if (actor) record({ by: actor.key, issuedTo: actor.issuedTo });
 */
export interface Actor {
  key: string;
  issuedTo?: string;
  roles: Role[];
}

declare module 'hono' {
  interface ContextVariableMap {
    actor?: Actor;
  }
}

/** Whether `actor` may do what `role` may: its own roles, `admin` for all, and any role for `viewer`. */
export function holds(actor: Actor, role: Role): boolean {
  if (actor.roles.includes('admin') || actor.roles.includes(role)) return true;
  return role === 'viewer' && actor.roles.length > 0;
}
