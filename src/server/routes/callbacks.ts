import { z } from 'zod';
import type { Callbacks } from '../../workflows/callbacks.js';
import { route } from '../route.js';

/** The one-time URLs of `wait_for_callback` steps: the service POSTs its result there. */
export function callbackRoutes(callbacks: Callbacks) {
  return [
    route({
      method: 'post',
      path: '/callbacks/{token}',
      tag: 'executions',
      summary:
        'Complete a wait_for_callback step with the JSON body, once: a repeat of that body answers `duplicate` at any time and completes nothing; a different body to a used URL, or any after the step timed out or the execution ended without it, 409',
      body: z.unknown(),
      status: 200,
      response: z.object({ execution_id: z.string(), step_id: z.string(), status: z.enum(['completed', 'duplicate']) }),
      errors: [404, 409, 413],
      handle: ({ params, body }) => callbacks.complete(params.token!, body),
    }),
  ];
}
