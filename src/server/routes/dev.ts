import { z } from 'zod';
import { route, type Route } from '../route.js';

/** A module `runledger dev` loads: how its last load went. */
export interface ModuleStatus {
  /** The flag that names it: `--workflows`. */
  flag: string;
  path: string;
  /** The one-line failure of the last load (`SyntaxError at flows.ts:6:23: …`), null when it loaded. */
  error: string | null;
  /** When the last load was tried (ISO 8601). */
  at: string;
  /** `name@version` of the workflows serving new runs. */
  serving: string[];
}

const moduleStatus = z.object({
  flag: z.string(),
  path: z.string(),
  error: z.string().nullable().describe("the last load's failure on one line; the previous version keeps serving"),
  at: z.string().describe('when the last load was tried (ISO 8601)'),
  serving: z.array(z.string()).describe('`name@version` of the workflows new runs start on'),
});

/**
 * `GET /dev/status`: the modules `runledger dev` reloads and whether their last load failed (the
 * dashboard shows a banner then). Any other server has none: an empty list, not a 404 (which a
 * browser reports as an error on every page of the dashboard).
 *
 * @example devRoutes(() => [{ flag: '--workflows', path: './flows.ts', error: null, at: '2026-…', serving: ['greet@5c0027e7543c'] }])
 */
export function devRoutes(status: () => ModuleStatus[]): Route[] {
  return [
    route({
      method: 'get',
      path: '/dev/status',
      tag: 'dev',
      summary:
        'runledger dev only: the modules it reloads, and the failure of the last load of each (null when it loaded)',
      status: 200,
      response: z.object({ modules: z.array(moduleStatus) }),
      handle: async () => ({ modules: status() }),
    }),
  ];
}
