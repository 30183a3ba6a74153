import type { Clock } from './clock.js';
import { reject } from './http.js';

/** One callback the services sent: where, what, and how its attempts went. */
export interface CallbackDelivery {
  url: string;
  body: unknown;
  attempts: number;
  /** The last answer's status; null when none came (connection refused, timeout). */
  status: number | null;
  delivered: boolean;
  error: string | null;
  at: string;
}

/** Service-time waits before the 2nd, 3rd and 4th attempt (scaled by speed like every delay). */
const RETRY_MS = [500, 1000, 2000];
const ATTEMPT_TIMEOUT_MS = 5000;

/**
 * The webhook alternative of the brief (§4.3): when work that was created with a `callback_url`
 * ends, its final view (the same JSON as its GET) is POSTed there; any non-2xx answer or network
 * error is retried up to 4 attempts in all.
 */
export class Callbacks {
  private deliveries: CallbackDelivery[] = [];
  private inflight = new Set<AbortController>();
  private counter = 0;
  /** Bumped by clear(): an attempt of an older generation does not retry. */
  private generation = 0;

  constructor(private readonly clock: Clock) {}

  /** Sends `body` to `url`; `copies` > 1 sends it that many times, each its own delivery. */
  send(url: string, body: unknown, copies = 1): void {
    for (let i = 1; i < copies; i++) this.send(url, body);
    const delivery: CallbackDelivery = {
      url,
      body,
      attempts: 0,
      status: null,
      delivered: false,
      error: null,
      at: new Date().toISOString(),
    };
    this.deliveries.push(delivery);
    const owner = `callback:${++this.counter}`;
    const generation = this.generation;
    const attempt = async () => {
      delivery.attempts++;
      const abort = new AbortController();
      this.inflight.add(abort);
      const timer = setTimeout(() => abort.abort(), ATTEMPT_TIMEOUT_MS);
      try {
        const answer = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: abort.signal,
        });
        await answer.arrayBuffer();
        delivery.status = answer.status;
        delivery.delivered = answer.ok;
        delivery.error = answer.ok ? null : `answered ${answer.status}`;
      } catch (error) {
        delivery.status = null;
        delivery.error = (error as Error).message;
      } finally {
        clearTimeout(timer);
        this.inflight.delete(abort);
      }
      const wait = RETRY_MS[delivery.attempts - 1];
      if (!delivery.delivered && wait !== undefined && generation === this.generation)
        this.clock.after(owner, wait, () => void attempt());
    };
    void attempt();
  }

  list(): CallbackDelivery[] {
    return this.deliveries.map((d) => ({ ...d }));
  }

  /** Forgets every delivery and stops those still trying. */
  clear(): void {
    this.generation++;
    for (const abort of this.inflight) abort.abort();
    this.inflight.clear();
    this.deliveries = [];
  }
}

/** A `callback_url` field: an http(s) URL on a loopback host (the mock never calls out of the machine). */
export function callbackUrl(body: Record<string, unknown>): string | null {
  const value = body.callback_url;
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length > 2000)
    throw reject(422, 'invalid_field', 'callback_url must be a URL of at most 2000 characters', 'callback_url');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw reject(422, 'invalid_field', 'callback_url must be an absolute http(s) URL', 'callback_url');
  }
  const loopback =
    url.hostname === 'localhost' || url.hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
  if (!/^https?:$/.test(url.protocol) || !loopback)
    throw reject(
      422,
      'invalid_field',
      'callback_url must be an http(s) URL on a loopback host (127.0.0.1, localhost, [::1])',
      'callback_url',
    );
  return value;
}
