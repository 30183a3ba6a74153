import type { EngineEvents } from './events.js';

/**
 * What the engine needs of a tracer: spans named by the engine, joined by W3C `traceparent`
 * strings so a span's parent can be stored with a run and found again in another process, after
 * a crash. The OpenTelemetry implementation is `otel.ts`, loaded only when tracing is configured;
 * with no tracer the engine skips every span (no cost when off).
 */
export interface Span {
  /** `00-<trace id>-<span id>-<flags>`: the parent to give a child span, or to send downstream. */
  readonly traceparent: string;
  /** Ends the span; an error marks it failed. */
  end(error?: string, attributes?: SpanAttributes): void;
}

export type SpanAttributes = Record<string, string | number | boolean>;

export interface Tracer {
  start(
    name: string,
    options?: {
      parent?: string | null | undefined;
      kind?: 'server' | 'client' | 'internal';
      attributes?: SpanAttributes;
    },
  ): Span;
  /** Exports what has ended so far. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A valid `traceparent` header value, or undefined (a malformed one is ignored, as the W3C spec says). */
export function parseTraceparent(value: string | null | undefined): string | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  return match[0];
}

/** The trace id of a `traceparent`, for log lines. */
export function traceIdOf(traceparent: string | null | undefined): string | undefined {
  return parseTraceparent(traceparent)?.slice(3, 35);
}

/** What the engine hands down to report to: its events, and its tracer when tracing is on. */
export interface Observe {
  events: EngineEvents;
  tracer: Tracer | null;
}
