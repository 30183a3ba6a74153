import { ApiError, UnreachableError } from './errors.js';
import { sseReader } from '../sse-read.js';
import type { RunEvent } from './records.js';

const enc = encodeURIComponent;

/** The HTTP transport under `Client`: JSON calls with the token, the SSE stream of a run's events. */
export class Transport {
  protected readonly url: string;
  constructor(protected readonly options: { url: string; token?: string | undefined }) {
    this.url = options.url.replace(/\/+$/, '');
  }

  /**
   * A run's events as they are journaled (the server's SSE stream), from after `after` to the run's
   * last event; a dropped connection resumes from the last event seen.
   */
  async *follow(runId: string, after = 0): AsyncGenerator<RunEvent> {
    let last = after;
    for (let retries = 0; ; ) {
      const response = await this.fetch(`/runs/${enc(runId)}/events/stream`, {
        headers: {
          accept: 'text/event-stream',
          'last-event-id': String(last),
          ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
        },
      });
      if (!response.ok || !response.body) {
        const error = (await response.json().catch(() => ({}))).error ?? {};
        throw new ApiError(
          response.status,
          error.code ?? 'http',
          `GET /runs/${runId}/events/stream: ${response.status} ${error.message ?? ''}`,
        );
      }
      const read = sseReader();
      try {
        for await (const chunk of response.body.pipeThrough(new TextDecoderStream())) {
          for (const message of read(chunk)) {
            const event = JSON.parse(message.data) as RunEvent;
            last = event.version;
            retries = 0;
            yield event;
          }
        }
        return;
      } catch (error) {
        if (++retries > 5) throw error;
      }
    }
  }

  /** fetch, with "cannot reach" instead of undici's bare `fetch failed`. */
  private async fetch(path: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(this.url + path, init);
    } catch (error) {
      if (init.signal?.aborted) throw error;
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new UnreachableError(
        `cannot reach ${this.url}${cause?.code ? ` (${cause.code})` : ''} — is \`runledger serve\` running? (--url, $RUNLEDGER_URL)`,
      );
    }
  }

  protected async call<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<T> {
    const response = await this.fetch(path, {
      method,
      ...(signal ? { signal } : {}),
      headers: {
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    let json: any = null;
    try {
      json = text === '' ? null : JSON.parse(text);
    } catch {
      throw new ApiError(
        response.status,
        'http',
        `${method} ${path}: ${response.status}, not JSON — is ${this.url} a runledger server? (${text.slice(0, 80)})`,
      );
    }
    if (!response.ok) {
      const error = json?.error ?? {};
      throw new ApiError(
        response.status,
        error.code ?? 'http',
        `${method} ${path}: ${response.status} ${error.message ?? text}`,
        error.problems,
      );
    }
    return json as T;
  }
}
