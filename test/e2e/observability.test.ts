import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { OutboundEvent } from "@mom/contracts";
import { enableTracing, InMemorySpanExporter, type ObservabilityServer, type ReadableSpan, serveObservability } from "@mom/observability";
import { scrape, sample } from "../support/prometheus.js";
import { type Stack, startStack } from "../support/stack.js";

// One message through the real pipeline (CLI ingress -> NATS -> runner -> fake LLM -> bash tool ->
// NATS -> CLI ingress): what /metrics counts, and the trace it leaves.
describe("metrics and traces of a real message", () => {
  let st: Stack;
  let server: ObservabilityServer;
  let stopTracing: () => Promise<void>;
  const exporter = new InMemorySpanExporter();

  beforeAll(async () => {
    stopTracing = enableTracing({ exporter, serviceName: "e2e", immediate: true });
    server = await serveObservability({ port: 0, host: "127.0.0.1" });
    st = await startStack({
      // Priced, so the cost counter has something to count.
      models: (json) => {
        for (const p of Object.values(json.providers)) for (const m of p.models) m.cost = { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 };
        return json;
      },
    });
  });
  afterAll(async () => {
    await st?.stop();
    await server?.close();
    await stopTracing?.();
  });

  it("is ready, counts the message, its run, model calls, tokens, cost and tool call, and traces it end to end", async () => {
    const ready = await fetch(`http://127.0.0.1:${server.port}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready" });

    const outbound: Array<{ type: string; traceparent?: string }> = [];
    const follow = st.bus.follow({
      stream: "OUT",
      filterSubject: st.bus.subjects.wildcard("out"),
      from: "new",
      schema: OutboundEvent,
      handler: (d) => void outbound.push({ type: d.data.event.type, traceparent: d.traceparent }),
    });
    const before = await scrape(server.port);
    st.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Say a word", command: "echo traced-word" } }], usage: { input: 100, output: 20 } }, { text: "all done", usage: { input: 150, output: 10 } });
    st.type("please run something");
    await st.output.waitFor("all done", 30_000);
    // The presenter counts the answer once it has drawn it: wait for that, never for a time.
    let after = await scrape(server.port);
    for (let i = 0; i < 100 && sample(after, "mom_messages_out_total", { adapter: "cli" }) === sample(before, "mom_messages_out_total", { adapter: "cli" }); i++) {
      await new Promise((r) => setTimeout(r, 50));
      after = await scrape(server.port);
    }
    follow.stop();

    const delta = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);
    const model = "fake/fake-model";
    expect(delta("mom_messages_in_total", { adapter: "cli", source: "ingress" })).toBe(1);
    expect(delta("mom_messages_out_total", { adapter: "cli" })).toBe(1);
    expect(delta("mom_runs_total", { outcome: "stop" })).toBe(1);
    expect(delta("mom_run_duration_seconds_count", { outcome: "stop" })).toBe(1);
    expect(delta("mom_model_calls_total", { model })).toBe(2);
    expect(delta("mom_model_tokens_total", { model, kind: "input" })).toBe(250);
    expect(delta("mom_model_tokens_total", { model, kind: "output" })).toBe(30);
    expect(delta("mom_model_cost_usd_total", { model })).toBeCloseTo((250 * 3 + 30 * 15) / 1_000_000, 9);
    expect(delta("mom_tool_calls_total", { tool: "bash", outcome: "ok" })).toBe(1);
    expect(after).toMatch(/^mom_queue_depth\{runner="[^"]+"\} 0$/m);

    const spans = exporter.getFinishedSpans();
    const one = (name: string): ReadableSpan => {
      const found = spans.filter((s) => s.name === name);
      expect(found.map((s) => s.name)).toEqual([name]);
      return found[0]!;
    };
    const receive = one("mom.ingress.receive");
    const run = one("mom.run");
    const tool = one("mom.tool bash");
    const render = one("mom.ingress.render");
    const modelCalls = spans.filter((s) => s.name === "mom.model_call");
    expect(modelCalls).toHaveLength(2);
    const traceId = receive.spanContext().traceId;
    for (const s of [run, tool, render, ...modelCalls]) expect(s.spanContext().traceId).toBe(traceId);
    expect(run.parentSpanContext?.spanId).toBe(receive.spanContext().spanId);
    for (const s of [tool, ...modelCalls]) expect(s.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
    expect(render.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
    expect(modelCalls[0]!.attributes).toMatchObject({ "gen_ai.request.model": "fake-model", "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20 });
    expect(run.attributes).toMatchObject({ "mom.channel": "cli/local", "mom.stop_reason": "stop" });

    // Every outbound event of the run carries the run span's context in its NATS headers.
    const runEvents = outbound.filter((e) => e.type !== "run_queued");
    expect(runEvents.length).toBeGreaterThan(3);
    for (const e of runEvents) expect(e.traceparent).toBe(`00-${traceId}-${run.spanContext().spanId}-01`);
  });
});
