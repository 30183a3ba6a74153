import { TerminalError } from '../errors.js';
import { sign } from '../functions/call.js';
import { httpRequest } from '../workflows/actions/http.js';

/** How long a receiver has to answer one attempt. */
const TIMEOUT_SECONDS = 10;

/** What one attempt came to: the receiver's status (null: no answer), and the error when it was not a 2xx. */
export interface SendResult {
  status: number | null;
  error: Error | null;
  /** Worth another attempt: no answer, 408, 429 or 5xx. */
  retryable: boolean;
  durationMs: number;
}

/**
 * POSTs `body` (JSON text) to `url` under the SSRF rules of `http_request` (`allow`), signed like the function calls:
 * `runledger-signature: t=<unix s>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, with `runledger-delivery` (the same on
 * every attempt, also as `Idempotency-Key`) and `runledger-event`. Never throws: the outcome says what happened.
 *
 * @example await sendDelivery({ url, secret, body: '{"type":"run.failed"}', deliveryId: 'dlv_…', event: 'run.failed' }, ctx);
 */
export async function sendDelivery(
  d: { url: string; secret: string; body: string; deliveryId: string; event: string },
  ctx: { allow: string[]; signal: AbortSignal },
): Promise<SendResult> {
  const started = Date.now();
  const headers = {
    'content-type': 'application/json',
    'runledger-signature': sign(d.secret, d.body),
    'runledger-delivery': d.deliveryId,
    'runledger-event': d.event,
  };
  try {
    const answer = await httpRequest(
      { method: 'POST', url: d.url, headers, body: d.body, timeout_seconds: TIMEOUT_SECONDS },
      { allow: ctx.allow, signal: ctx.signal, idempotencyKey: d.deliveryId },
    );
    return { status: answer.status, error: null, retryable: false, durationMs: Date.now() - started };
  } catch (error) {
    const status = (error as { status?: unknown }).status;
    return {
      status: typeof status === 'number' ? status : null,
      error: error as Error,
      retryable: !(error instanceof TerminalError),
      durationMs: Date.now() - started,
    };
  }
}
