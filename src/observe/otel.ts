import type { Span, SpanAttributes, Tracer } from './trace.js';

/**
 * An OpenTelemetry tracer exporting over OTLP/HTTP, when the standard environment asks for one
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `OTEL_SDK_DISABLED=true`
 * or `OTEL_TRACES_EXPORTER=none` turn it off). Otherwise null, and the SDK is never loaded.
 * `OTEL_SERVICE_NAME` names the service (default `runledger`); the exporter reads
 * `OTEL_EXPORTER_OTLP_HEADERS` and the other exporter settings itself.
 *
 * @example
 * const tracer = await startTracing(process.env);
 * if (tracer) engine.useTracer(tracer);
 */
export async function startTracing(env: Record<string, string | undefined>): Promise<Tracer | null> {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!traces && !base) return null;
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === 'true' || env.OTEL_TRACES_EXPORTER?.toLowerCase() === 'none')
    return null;
  const url = traces ?? `${base!.replace(/\/+$/, '')}/v1/traces`;
  const [api, sdk, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new sdk.BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'runledger' }),
    spanProcessors: [new sdk.BatchSpanProcessor(new OTLPTraceExporter({ url }))],
  });
  const tracer = provider.getTracer('runledger');
  const kinds = { server: api.SpanKind.SERVER, client: api.SpanKind.CLIENT, internal: api.SpanKind.INTERNAL };

  const parentContext = (traceparent: string | null | undefined) => {
    const match = traceparent ? /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent) : null;
    if (!match) return api.ROOT_CONTEXT;
    return api.trace.setSpanContext(api.ROOT_CONTEXT, {
      traceId: match[1]!,
      spanId: match[2]!,
      traceFlags: Number.parseInt(match[3]!, 16),
      isRemote: true,
    });
  };

  return {
    start(name, options = {}): Span {
      const span = tracer.startSpan(
        name,
        { kind: kinds[options.kind ?? 'internal'], ...(options.attributes ? { attributes: options.attributes } : {}) },
        parentContext(options.parent),
      );
      const context = span.spanContext();
      return {
        traceparent: `00-${context.traceId}-${context.spanId}-0${(context.traceFlags & 1).toString(16)}`,
        end(error?: string, attributes?: SpanAttributes) {
          if (attributes) span.setAttributes(attributes);
          if (error !== undefined) span.setStatus({ code: api.SpanStatusCode.ERROR, message: error });
          span.end();
        },
      };
    },
    flush: () => provider.forceFlush(),
    close: () => provider.shutdown(),
  };
}
