import { z } from 'zod';

const status = z.int().min(200).max(599);

/**
 * An `http_request` step's `effect` (issue 46): its intent is journaled before the request, and an attempt after a
 * crash between the request and its record sends `reconcile` (a GET, with the step's `Idempotency-Key`) to learn
 * whether the request went through, instead of sending it again. A status of `happened_when` (default 200): it did,
 * the step's output is that answer; of `not_happened_when` (default 404): it did not, the request is sent again; any
 * other answer fails the reconcile, retried by the step's `retry`. `at_most_once` without `reconcile`: a person
 * decides (`POST /runs/{id}/effect/decide`). `{}`: the intent alone.
 */
export const httpEffectSchema = z
  .object({
    reconcile: z
      .object({
        url: z.string().min(1),
        method: z.literal('GET', { error: 'must be GET: a reconcile only reads' }).default('GET'),
        headers: z.record(z.string(), z.string()).optional(),
        timeout_seconds: z.number().positive().max(300).optional(),
        happened_when: z.array(status).min(1).max(20).optional(),
        not_happened_when: z.array(status).min(1).max(20).optional(),
      })
      .strict()
      .refine((r) => !(r.happened_when ?? [200]).some((s) => (r.not_happened_when ?? [404]).includes(s)), {
        message: 'a status cannot be in both happened_when and not_happened_when',
      })
      .optional(),
    at_most_once: z.boolean().optional(),
  })
  .strict();

export type HttpEffect = z.infer<typeof httpEffectSchema>;
