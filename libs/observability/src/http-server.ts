import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { collectProcessMetrics, registry } from "./metrics.js";
import { readiness, readinessWarnings } from "./readiness.js";

export interface ObservabilityServer {
  /** The port it listens on (useful with port 0). */
  readonly port: number;
  close(): Promise<void>;
}

interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * Serves GET /healthz (the process is up), /readyz (every service of the process is ready: 200, or
 * 503 with a one-line JSON reason) and /metrics (Prometheus text) — what Kubernetes probes and
 * Prometheus scrape (docs/observability.md).
 */
export async function serveObservability(o: { port: number; host?: string; logger?: Logger }): Promise<ObservabilityServer> {
  collectProcessMetrics();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
      res.end(body);
    };
    if (req.method !== "GET" && req.method !== "HEAD") return send(405, "application/json", '{"error":"only GET"}\n');
    if (path === "/healthz") return send(200, "application/json", '{"status":"ok"}\n');
    if (path === "/readyz") {
      const r = readiness();
      const warnings = readinessWarnings();
      const body = r.ready ? { status: "ready", ...(warnings.length && { warnings }) } : { status: "not ready", reason: r.reason, ...(warnings.length && { warnings }) };
      return send(r.ready ? 200 : 503, "application/json", `${JSON.stringify(body)}\n`);
    }
    if (path === "/metrics") {
      registry.metrics().then(
        (text) => send(200, registry.contentType, text),
        (err: unknown) => send(500, "text/plain", `metrics failed: ${(err as Error).message}\n`),
      );
      return;
    }
    send(404, "application/json", '{"error":"not found: use /healthz, /readyz or /metrics"}\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) =>
      reject(new Error(err.code === "EADDRINUSE" ? `HTTP port ${o.port} is in use (MOM_HTTP_PORT / observability.httpPort)` : `cannot serve HTTP on port ${o.port}: ${err.message}`)),
    );
    server.listen(o.port, o.host ?? "0.0.0.0", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  o.logger?.info({ port }, "serving /healthz, /readyz and /metrics");
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The HTTP port: env MOM_HTTP_PORT wins over config.json `observability.httpPort`; neither set
 * means no HTTP server. An invalid value is a one-line error.
 */
export function resolveHttpPort(env: NodeJS.ProcessEnv, configured?: number): number | undefined {
  const raw = env.MOM_HTTP_PORT?.trim();
  if (!raw) return configured;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) throw new Error(`MOM_HTTP_PORT must be a port number 0-65535 (got ${JSON.stringify(env.MOM_HTTP_PORT)})`);
  return port;
}
