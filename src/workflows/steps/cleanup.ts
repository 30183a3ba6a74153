import type { StepContext } from '../../runtime/workflow.js';
import { httpRequest, type HttpRequestConfig } from '../actions/http.js';

/** Statuses that mean "already gone": cleanup is idempotent, so they count as done (brief §9.3). */
const DONE = new Set([404, 409, 410]);

/**
 * Sends a compensation or cancel request. 404, 409 and 410 count as done; other failures throw,
 * and the runtime tries the compensation again (three times in all).
 */
export async function cleanup(
  config: HttpRequestConfig,
  ctx: StepContext,
  allow: string[],
): Promise<{ status: number }> {
  try {
    const response = await httpRequest(config, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal, allow });
    return { status: response.status };
  } catch (error) {
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && DONE.has(status)) return { status };
    throw error;
  }
}
