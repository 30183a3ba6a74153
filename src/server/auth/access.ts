import type { IncomingMessage } from 'node:http';
import type { Context, Next } from 'hono';
import type { EngineEvents } from '../../observe/events.js';
import { HttpError } from '../errors.js';
import { FAILURE_WINDOW_MS, FailedLogins } from './abuse.js';
import { type Actor, holds } from './actor.js';
import { ApiKeys, type KeyTable } from './keys.js';
import type { Access } from './permissions.js';

/**
 * The server's door: the keys, and the failed attempts per address. One per server, shared by the
 * HTTP app and the channel WebSocket so both count the same failures and see the same revocations.
 *
 * @example const gate = createGate(opened.keys, { token, events: engine.events });
 */
export class Gate {
  constructor(
    readonly keys: ApiKeys,
    private readonly failures: FailedLogins,
  ) {}

  /**
   * The actor of an `Authorization` header (or a WebSocket's `?token=`): 401 for none, or a key unknown or revoked;
   * 429 with Retry-After for an address past its failed attempts. The secret is in no error.
   */
  async actorOf(authorization: string | undefined, address: string | undefined): Promise<Actor> {
    const wait = address === undefined ? 0 : this.failures.retryAfter(address);
    if (wait > 0)
      throw new HttpError(
        429,
        'too_many_failures',
        `too many failed authentications from ${address}: try again later`,
        {
          'retry-after': String(wait),
        },
      );
    const secret = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
    if (secret === undefined)
      throw new HttpError(
        401,
        'unauthorized',
        'this server needs a key: Authorization: Bearer <key or RUNLEDGER_TOKEN>',
      );
    const actor = await this.keys.authenticate(secret);
    if (actor) return actor;
    if (address !== undefined) this.failures.fail(address);
    throw new HttpError(401, 'unauthorized', 'the key is unknown or revoked');
  }
}

/** The gate of a server: `keys` is the store's key table (none: only the token, no keys). */
export function createGate(
  keys: KeyTable | undefined,
  options: { token?: string | undefined; events: EngineEvents },
): Gate {
  const failures = new FailedLogins((address, count) =>
    options.events.emit('auth:throttled', { address, failures: count, windowMs: FAILURE_WINDOW_MS }),
  );
  return new Gate(new ApiKeys(keys, { token: options.token }), failures);
}

/** The address of the client on the other end of the socket (undefined in process, with no socket). */
export function clientAddress(c: Context): string | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress;
}

/**
 * Authenticates every request but `/healthz` and `/callbacks/…` when keys are on, and puts its actor
 * on the context (`c.get('actor')`). Mounted after the dashboard's files, which hold no data.
 */
export function authenticate(gate: Gate, isPublic: (path: string) => boolean) {
  return async (c: Context, next: Next) => {
    if (isPublic(c.req.path) || !(await gate.keys.enabled())) return next();
    c.set('actor', await gate.actorOf(c.req.header('authorization'), clientAddress(c)));
    return next();
  };
}

/** The 403 of an actor without the role a route needs; undefined when it may. */
export function refusal(actor: Actor | undefined, access: Access, what: string): HttpError | undefined {
  if (actor === undefined || access === 'public' || holds(actor, access)) return undefined;
  return new HttpError(
    403,
    'forbidden',
    `${what} needs the role '${access}'; key '${actor.key}' has ${actor.roles.map((r) => `'${r}'`).join(', ')}`,
  );
}
