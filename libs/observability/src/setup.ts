import { type ObservabilityServer, resolveHttpPort, serveObservability } from "./http-server.js";
import { enableTracing, otlpConfigured } from "./tracing.js";

interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface Observability {
  /** The HTTP server, when a port was asked for. */
  server?: ObservabilityServer;
  close(): Promise<void>;
}

/**
 * What a mom process starts before its services: the /healthz, /readyz, /metrics server when
 * MOM_HTTP_PORT (or config.json `observability.httpPort`) is set, and OTLP trace export when the
 * OTEL_EXPORTER_OTLP_* variables are. Neither by default: `mom up` and tests open no port.
 */
export async function startObservability(o: { serviceName: string; httpPort?: number; env?: NodeJS.ProcessEnv; logger?: Logger }): Promise<Observability> {
  const env = o.env ?? process.env;
  const port = resolveHttpPort(env, o.httpPort);
  let stopTracing: (() => Promise<void>) | undefined;
  if (otlpConfigured(env)) {
    // The OTLP spec's rule: a traces endpoint is used as is, a base endpoint gets /v1/traces.
    // Headers and timeout come from the OTEL_EXPORTER_OTLP_* variables, read by the exporter.
    const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || `${env.OTEL_EXPORTER_OTLP_ENDPOINT!.replace(/\/+$/, "")}/v1/traces`;
    // Loaded only here: the exporter and its protocol code are a tenth of a second of every start.
    const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
    stopTracing = enableTracing({ exporter: new OTLPTraceExporter({ url }), serviceName: env.OTEL_SERVICE_NAME || o.serviceName });
    o.logger?.info({ url }, "exporting traces over OTLP");
  }
  let server: ObservabilityServer | undefined;
  try {
    server = port === undefined ? undefined : await serveObservability({ port, logger: o.logger });
  } catch (err) {
    await stopTracing?.();
    throw err;
  }
  return {
    ...(server && { server }),
    close: async () => {
      await server?.close();
      await stopTracing?.().catch((err: unknown) => o.logger?.warn({ err }, "flushing traces failed"));
    },
  };
}
