import type { MockResponse } from './http.js';
import { fail } from './http.js';

/**
 * `Idempotency-Key` on POST, scoped to the method and path (the brief keeps one key per execution,
 * so the same key on two endpoints is two requests). Like Stripe:
 * - a repeat with the same body answers the first response again (same status, same resource as
 *   it was then) with `Idempotent-Replayed: true`, and creates nothing;
 * - a repeat with a different body is a 422 `idempotency_key_reused`;
 * - only successful (2xx) answers are kept: a validation error or an injected fault was no work
 *   done, so a retry with the same key is a fresh attempt.
 * Requests with the same key that arrive together are answered one after the other.
 */
export class IdempotencyKeys {
  private saved = new Map<string, { fingerprint: string; response: MockResponse }>();
  private busy = new Map<string, Promise<void>>();

  async run(
    scope: string,
    key: string,
    body: unknown,
    handle: () => Promise<MockResponse>,
  ): Promise<{ response: MockResponse; replayed: boolean }> {
    const id = `${scope} ${key}`;
    while (this.busy.has(id)) await this.busy.get(id);
    const fingerprint = canonical(body);
    const first = this.saved.get(id);
    if (first) {
      if (first.fingerprint !== fingerprint) {
        return {
          response: fail(
            422,
            'idempotency_key_reused',
            `Idempotency-Key ${key} was used with a different body on ${scope}`,
          ),
          replayed: false,
        };
      }
      return {
        response: { ...first.response, headers: { ...first.response.headers, 'idempotent-replayed': 'true' } },
        replayed: true,
      };
    }
    let done!: () => void;
    this.busy.set(id, new Promise((resolve) => (done = resolve)));
    try {
      const response = await handle();
      if (response.status >= 200 && response.status < 300)
        this.saved.set(id, { fingerprint, response: structuredClone(response) });
      return { response, replayed: false };
    } finally {
      this.busy.delete(id);
      done();
    }
  }

  clear(): void {
    this.saved.clear();
  }
}

/** JSON with sorted keys, so key order and spacing do not make two bodies differ. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}
