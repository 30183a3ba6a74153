/** The HTTP API, as the dashboard calls it: same origin, the token (when the server wants one) kept for the tab. */

import { sseReader } from '../../src/sse-read.js';

const TOKEN_KEY = 'runledger.token';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly problems: Array<{ path: string; message: string }> = [],
  ) {
    super(message);
  }
}

let asking: Promise<void> | null = null;
let tokenPrompt: ((retry: boolean) => Promise<string>) | null = null;

/** The token dialog registers itself here; a 401 opens it once, however many calls failed. */
export function onTokenNeeded(prompt: (retry: boolean) => Promise<string>): void {
  tokenPrompt = prompt;
}

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

async function askToken(): Promise<void> {
  if (!tokenPrompt) throw new ApiError(401, 'unauthorized', 'the server needs a token');
  if (!asking) {
    const retry = token() !== null;
    asking = tokenPrompt(retry).then((t) => {
      sessionStorage.setItem(TOKEN_KEY, t);
      asking = null;
    });
  }
  return asking;
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const t = token();
  return { ...(t ? { authorization: `Bearer ${t}` } : {}), ...extra };
}

/** Calls the API; a 401 asks for the token and tries again. Errors become ApiError with the server's code, message and problems. */
export async function api<T = any>(
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<T> {
  for (;;) {
    const res = await fetch(path, {
      method: init.method ?? 'GET',
      headers: headers({ ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers }),
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
    });
    if (res.status === 401) {
      await askToken();
      continue;
    }
    const text = await res.text();
    const body = text ? JSON.parse(text) : null;
    if (!res.ok) {
      const e = body?.error ?? {};
      throw new ApiError(res.status, e.code ?? `http_${res.status}`, e.message ?? res.statusText, e.problems ?? []);
    }
    return body as T;
  }
}

/** Like `api`, but a 404 (an endpoint this server does not have, or no such thing) is null. */
export async function apiOptional<T = any>(path: string, signal?: AbortSignal): Promise<T | null> {
  try {
    return await api<T>(path, signal ? { signal } : {});
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 405)) return null;
    throw error;
  }
}

export interface SseEvent {
  id: string;
  event: string;
  data: any;
}

/**
 * Reads a Server-Sent Events endpoint with fetch (so the token goes in a header), calling
 * `onBatch` with the events of each chunk. Reconnects with Last-Event-ID after a drop; a stream
 * the server closes on purpose (a run's, at its end) calls `onEnd`. Stop with the signal.
 */
export function subscribe(
  path: string,
  onBatch: (events: SseEvent[]) => void,
  options: { signal: AbortSignal; onEnd?: () => void; onState?: (live: boolean) => void },
): void {
  let last: string | null = null;
  const run = async () => {
    while (!options.signal.aborted) {
      try {
        const res = await fetch(path, {
          headers: headers({ accept: 'text/event-stream', ...(last ? { 'last-event-id': last } : {}) }),
          signal: options.signal,
        });
        if (res.status === 401) {
          await askToken();
          continue;
        }
        if (!res.ok || !res.body) throw new Error(`stream ${res.status}`);
        options.onState?.(true);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        const read = sseReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          const events: SseEvent[] = read(value).map((m) => ({ ...m, data: JSON.parse(m.data) }));
          for (const e of events) if (e.id) last = e.id;
          if (events.length) onBatch(events);
        }
        options.onState?.(false);
        options.onEnd?.();
        return;
      } catch {
        if (options.signal.aborted) return;
        options.onState?.(false);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  };
  void run();
}

let document: Promise<Set<string>> | null = null;

type Operation = { requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> } };

/**
 * The API's operations (`POST /workflows/{id}/executions/{execution_id}/retry` …) and the fields of their JSON bodies
 * (`POST /runs/{id}/cancel body.reason`) from its OpenAPI document: actions, and their fields, are shown only when the server offers them.
 */
export function offered(): Promise<Set<string>> {
  if (!document) {
    document = api<{ paths: Record<string, Record<string, Operation>> }>('/openapi.json').then(
      (d) =>
        new Set(
          Object.entries(d.paths).flatMap(([path, methods]) =>
            Object.entries(methods).flatMap(([m, op]) => {
              const operation = `${m.toUpperCase()} ${path}`;
              const fields = Object.keys(op?.requestBody?.content?.['application/json']?.schema?.properties ?? {});
              return [operation, ...fields.map((f) => `${operation} body.${f}`)];
            }),
          ),
        ),
      () => {
        document = null;
        return new Set<string>();
      },
    );
  }
  return document;
}

/** A WebSocket URL on this origin, with the token as `?token=` (browsers cannot set its headers). */
export function socketUrl(path: string): string {
  const url = new URL(path, location.href);
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const t = token();
  if (t) url.searchParams.set('token', t);
  return url.toString();
}
