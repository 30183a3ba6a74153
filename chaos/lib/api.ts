import { setTimeout as sleep } from 'node:timers/promises';

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

/**
 * The scenario's HTTP client for a runledger server. It counts every status it gets; a request
 * that meets a dead server (refused, reset) or a 5xx is sent again, the same, until it gets an
 * answer below 500 or the time runs out, as a careful client with an idempotency key would.
 */
export class Api {
  readonly statuses = new Map<number, number>();
  /** A few bodies of 5xx answers, to say what they were. */
  readonly samples: string[] = [];
  /** The first body of each status. */
  readonly firstBody = new Map<number, string>();
  networkErrors = 0;
  /** 503 answers without a `Retry-After`: an outage must say when to come back. */
  withoutRetryAfter = 0;

  constructor(readonly base: string) {}

  /** Answers ≥ 500 other than 503, and 503s without `Retry-After`. */
  fiveXX(): number {
    let n = this.withoutRetryAfter;
    for (const [status, count] of this.statuses) if (status >= 500 && status !== 503) n += count;
    return n;
  }

  count(status: number): number {
    return this.statuses.get(status) ?? 0;
  }

  /** One request; throws on a network error. */
  async once(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const res = await fetch(this.base + path, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    this.statuses.set(res.status, (this.statuses.get(res.status) ?? 0) + 1);
    if (!this.firstBody.has(res.status)) this.firstBody.set(res.status, `${method} ${path}: ${text.slice(0, 300)}`);
    if (res.status === 503 && !res.headers.get('retry-after')) this.withoutRetryAfter += 1;
    if (res.status >= 500 && this.samples.length < 5)
      this.samples.push(`${res.status} ${method} ${path}: ${text.slice(0, 300)}`);
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON: keep the text */
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  /** `once` again and again (after network errors and 5xx) until an answer below 500; null when `deadline` passed. */
  async send(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    deadline = Date.now() + 60_000,
  ): Promise<Answer | null> {
    for (let pause = 100; Date.now() < deadline; pause = Math.min(pause * 2, 2000)) {
      try {
        const answer = await this.once(method, path, body, headers);
        if (answer.status < 500) return answer;
      } catch {
        this.networkErrors += 1;
      }
      await sleep(pause);
    }
    return null;
  }

  summary(): string {
    return [...this.statuses]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}×${n}`)
      .join(' ');
  }
}
