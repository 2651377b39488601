export { collectProcessMetrics, metrics, registry, reportQueueDepth } from "./metrics.js";
export { addReadinessCheck, addReadinessWarning, readiness, readinessWarnings, type ReadinessCheck } from "./readiness.js";
export { type ObservabilityServer, resolveHttpPort, serveObservability } from "./http-server.js";
export { endSpan, enableTracing, otlpConfigured, type SpanOptions, SpanKind, SpanStatusCode, startSpan, traceparentOf, tracingEnabled, type TracingOptions, type Span } from "./tracing.js";
export { type Observability, startObservability } from "./setup.js";
// Tests collect spans with it (enableTracing({ exporter: new InMemorySpanExporter(), … })).
export { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
