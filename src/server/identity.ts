import type { Actor } from './auth/actor.js';

/** The most a recorded name holds (the `by` fields' limit). */
const MAX = 200;

/**
 * The name the journal records for an authenticated actor: its API key's name, followed by the person the key was
 * issued to in parentheses when it names one (`ci-deploy (ana@example.com)`).
 *
 * @example actorName({ key: 'bootstrap', roles: ['admin'] }) // 'bootstrap'
 */
export function actorName(actor: Actor): string {
  const name = actor.issuedTo ? `${actor.key} (${actor.issuedTo})` : actor.key;
  return name.slice(0, MAX);
}

/**
 * Who acts, as the journal records it: the authenticated actor when the request has one (a body's `by` is then
 * ignored: nobody can act in another's name), else, in open mode (no auth configured), the body's `by`, else
 * `fallback` (undefined: the caller's own default or its error for a missing `by`).
 *
 * @example whoActs(request.actor, body.by, 'api') // 'bootstrap' with the token; body.by ?? 'api' without one
 */
export function whoActs(actor: Actor | undefined, by: string | undefined, fallback?: string): string | undefined {
  if (actor) return actorName(actor);
  return by ?? fallback;
}
