import { type Attributes, type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";

export { SpanKind, SpanStatusCode, type Span };

/**
 * Tracing is off unless enabled (OTLP endpoint configured, or a test's exporter): then every
 * helper here returns undefined at once and nothing is allocated. When on, spans are parented
 * explicitly through W3C `traceparent` strings carried in NATS headers — no async context
 * tracking, so the hot path pays nothing for code that does not trace.
 */
let tracer: Tracer | undefined;
let provider: BasicTracerProvider | undefined;
const propagator = new W3CTraceContextPropagator();

const getter = { get: (c: Record<string, string>, k: string) => c[k], keys: (c: Record<string, string>) => Object.keys(c) };
const setter = { set: (c: Record<string, string>, k: string, v: string) => void (c[k] = v) };

export interface TracingOptions {
  exporter: SpanExporter;
  serviceName: string;
  /** Export each span as it ends (tests) instead of in batches. */
  immediate?: boolean;
}

/** Turns tracing on for this process; the returned function flushes and turns it off. */
export function enableTracing(o: TracingOptions): () => Promise<void> {
  const processor = o.immediate ? new SimpleSpanProcessor(o.exporter) : new BatchSpanProcessor(o.exporter);
  const p = new BasicTracerProvider({ resource: resourceFromAttributes({ "service.name": o.serviceName }), spanProcessors: [processor] });
  provider = p;
  tracer = p.getTracer("mom");
  return async () => {
    if (provider !== p) return;
    tracer = undefined;
    provider = undefined;
    await p.shutdown();
  };
}

export function tracingEnabled(): boolean {
  return tracer !== undefined;
}

/** Whether the environment asks for OTLP trace export (the standard OTEL_* variables). */
export function otlpConfigured(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === "true" || env.OTEL_TRACES_EXPORTER === "none") return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

/** The context a `traceparent` header names (a remote parent), or the root. */
function contextOf(traceparent: string | undefined): Context {
  return traceparent ? propagator.extract(ROOT_CONTEXT, { traceparent }, getter) : ROOT_CONTEXT;
}

export interface SpanOptions {
  /** The parent: a `traceparent` (from a NATS header) or a span of this process. */
  parent?: string | Span;
  kind?: SpanKind;
  attributes?: Attributes;
}

/** Starts a span, or returns undefined when tracing is off. */
export function startSpan(name: string, o: SpanOptions = {}): Span | undefined {
  if (!tracer) return undefined;
  const ctx = typeof o.parent === "string" || o.parent === undefined ? contextOf(o.parent) : trace.setSpan(ROOT_CONTEXT, o.parent);
  return tracer.startSpan(name, { kind: o.kind ?? SpanKind.INTERNAL, ...(o.attributes && { attributes: o.attributes }) }, ctx);
}

/** The W3C `traceparent` that makes a receiver's spans children of `span`. */
export function traceparentOf(span: Span | undefined): string | undefined {
  if (!span) return undefined;
  const carrier: Record<string, string> = {};
  propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, setter);
  return carrier.traceparent;
}

/** Ends a span, marking it failed with `error` when given. */
export function endSpan(span: Span | undefined, error?: string, attributes?: Attributes): void {
  if (!span) return;
  if (attributes) span.setAttributes(attributes);
  if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  span.end();
}
