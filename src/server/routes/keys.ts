import { z } from 'zod';
import { iso } from '../../iso.js';
import { ROLES } from '../auth/actor.js';
import type { ApiKeys, KeyRow } from '../auth/keys.js';
import { route } from '../route.js';

/* API keys (docs/security.md): created, listed (prefix only), rotated and revoked by an admin. A secret is in the answer to a create or a rotation only. */

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:@-]*$/;
const NAMESPACE = /^(\*|[a-z0-9][a-z0-9-]*)$/;

const keyResponse = z.object({
  id: z.string(),
  name: z.string(),
  issued_to: z.string().nullable(),
  prefix: z.string().describe('the first 8 characters of the secret, to tell keys apart'),
  roles: z.array(z.enum(ROLES)),
  namespace: z.string().describe("'*' for every namespace"),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
  last_used_at: z.string().nullable().describe('updated at most once per key per 10 s'),
});
const withSecret = keyResponse.extend({ secret: z.string().describe('shown in this answer only, never again') });

const createRequest = z.object({
  name: z
    .string()
    .min(1, 'must not be empty')
    .max(100, 'must be at most 100 characters')
    .regex(NAME, 'must be letters, digits or ._:@- (starting with a letter or digit)'),
  issued_to: z.string().min(1, 'must not be empty').max(200, 'must be at most 200 characters').optional(),
  roles: z
    .array(z.enum(ROLES, { error: `must be one of ${ROLES.join(', ')}` }))
    .min(1, `must name at least one role (${ROLES.join(', ')})`)
    .max(ROLES.length, `must name at most ${ROLES.length} roles`),
  namespace: z
    .string()
    .max(63, 'must be at most 63 characters')
    .regex(NAMESPACE, "must be '*' (every namespace) or lowercase letters, digits and -")
    .optional()
    .describe("'*' for every namespace; default 'default'"),
});

const record = (k: KeyRow) => ({
  id: k.id,
  name: k.name,
  issued_to: k.issuedTo,
  prefix: k.prefix,
  roles: k.roles,
  namespace: k.namespace,
  created_at: iso(k.createdAt),
  revoked_at: iso(k.revokedAt),
  last_used_at: iso(k.lastUsedAt),
});

export function keyRoutes(keys: ApiKeys) {
  return [
    route({
      method: 'post',
      path: '/keys',
      tag: 'keys',
      summary: 'Create an API key with roles; its `secret` is in this answer only (stored as a hash), never again',
      body: createRequest,
      status: 201,
      response: withSecret,
      errors: [400, 409],
      handle: async ({ body }) => {
        const { key, secret } = await keys.create({
          name: body.name,
          issuedTo: body.issued_to,
          roles: body.roles,
          namespace: body.namespace,
        });
        return { ...record(key), secret };
      },
    }),
    route({
      method: 'get',
      path: '/keys',
      tag: 'keys',
      summary: 'The API keys, oldest first, revoked ones too: their prefixes, never a secret or its hash',
      status: 200,
      response: z.object({ keys: z.array(keyResponse) }),
      handle: async () => ({ keys: (await keys.list()).map(record) }),
    }),
    route({
      method: 'post',
      path: '/keys/{id}/rotate',
      tag: 'keys',
      summary:
        'Give a key a new secret (in this answer only); the old one stops working (other processes: within 10 s)',
      status: 200,
      response: withSecret,
      errors: [404, 409],
      handle: async ({ params }) => {
        const { key, secret } = await keys.rotate(params.id!);
        return { ...record(key), secret };
      },
    }),
    route({
      method: 'delete',
      path: '/keys/{id}',
      tag: 'keys',
      summary: 'Revoke a key: it stops working (other processes: within 10 s); its row stays, listed as revoked',
      status: 200,
      response: keyResponse,
      errors: [404],
      handle: async ({ params }) => record(await keys.revoke(params.id!)),
    }),
  ];
}
