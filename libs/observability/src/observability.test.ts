import { afterEach, describe, expect, it } from "@jest/globals";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { addReadinessCheck, enableTracing, InMemorySpanExporter, metrics, resolveHttpPort, serveObservability, startObservability, startSpan, traceparentOf, endSpan, tracingEnabled } from "./index.js";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function get(port: number, path: string): Promise<{ status: number; body: string; type: string | null }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.text(), type: res.headers.get("content-type") };
}

describe("the observability HTTP server", () => {
  it("answers /healthz always, /readyz from the registered checks, /metrics in Prometheus text", async () => {
    const server = await serveObservability({ port: 0, host: "127.0.0.1" });
    cleanups.push(() => server.close());
    expect(await get(server.port, "/healthz")).toMatchObject({ status: 200, body: '{"status":"ok"}\n' });
    expect(await get(server.port, "/readyz")).toMatchObject({ status: 503, body: '{"status":"not ready","reason":"no service has started"}\n' });

    let reason: string | undefined = "NATS disconnected";
    const remove = addReadinessCheck("agent-runner", () => reason);
    cleanups.push(remove);
    expect(await get(server.port, "/readyz")).toMatchObject({ status: 503, body: '{"status":"not ready","reason":"agent-runner: NATS disconnected"}\n' });
    reason = undefined;
    expect(await get(server.port, "/readyz")).toMatchObject({ status: 200, body: '{"status":"ready"}\n' });

    metrics.deadLetters.inc({ stage: "obs-test" });
    const m = await get(server.port, "/metrics");
    expect(m.status).toBe(200);
    expect(m.type).toContain("text/plain");
    expect(m.body).toContain('mom_dead_letters_total{stage="obs-test"} 1');
    expect(m.body).toContain("mom_process_cpu_user_seconds_total");
    expect((await get(server.port, "/nope")).status).toBe(404);
  });

  it("says in one line when the port is taken", async () => {
    const a = await serveObservability({ port: 0, host: "127.0.0.1" });
    cleanups.push(() => a.close());
    await expect(serveObservability({ port: a.port, host: "127.0.0.1" })).rejects.toThrow(`HTTP port ${a.port} is in use (MOM_HTTP_PORT / observability.httpPort)`);
  });
});

describe("resolveHttpPort", () => {
  it("takes MOM_HTTP_PORT over the config, and nothing when neither is set", () => {
    expect(resolveHttpPort({ MOM_HTTP_PORT: "9090" }, 8081)).toBe(9090);
    expect(resolveHttpPort({}, 8081)).toBe(8081);
    expect(resolveHttpPort({ MOM_HTTP_PORT: "" }, undefined)).toBeUndefined();
    expect(() => resolveHttpPort({ MOM_HTTP_PORT: "http" })).toThrow('MOM_HTTP_PORT must be a port number 0-65535 (got "http")');
  });

  it("opens no port and exports no traces unless asked", async () => {
    const obs = await startObservability({ serviceName: "t", env: {} });
    expect(obs.server).toBeUndefined();
    expect(tracingEnabled()).toBe(false);
    await obs.close();
  });
});

describe("OTLP export", () => {
  it("sends the spans to OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces when it is set", async () => {
    const posts: Array<{ path: string; body: string }> = [];
    const receiver = createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8").on("data", (c: string) => (body += c));
      req.on("end", () => {
        posts.push({ path: req.url ?? "", body });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise<void>((r) => receiver.close(() => r())));
    const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    const obs = await startObservability({ serviceName: "otlp-test", env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint } });
    expect(tracingEnabled()).toBe(true);
    endSpan(startSpan("exported-span"));
    await obs.close(); // flushes the batch
    expect(tracingEnabled()).toBe(false);
    expect(posts).toHaveLength(1);
    expect(posts[0]!.path).toBe("/v1/traces");
    expect(posts[0]!.body).toContain("exported-span");
    expect(posts[0]!.body).toContain("otlp-test");
  });
});

describe("tracing", () => {
  it("does nothing while off, and parents spans through traceparent strings while on", async () => {
    expect(startSpan("x")).toBeUndefined();
    expect(traceparentOf(undefined)).toBeUndefined();
    const exporter = new InMemorySpanExporter();
    const stop = enableTracing({ exporter, serviceName: "t", immediate: true });
    cleanups.push(stop);
    const root = startSpan("ingress");
    const header = traceparentOf(root)!;
    expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const child = startSpan("run", { parent: header });
    const grandchild = startSpan("tool", { parent: child });
    endSpan(grandchild, "boom");
    endSpan(child);
    endSpan(root);
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(["tool", "run", "ingress"]);
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    expect(spans[1]!.parentSpanContext?.spanId).toBe(root!.spanContext().spanId);
    expect(spans[0]!.parentSpanContext?.spanId).toBe(child!.spanContext().spanId);
    expect(spans[0]!.status).toMatchObject({ code: 2, message: "boom" });
  });
});
