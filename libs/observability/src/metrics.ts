import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/**
 * Every metric mom exports, on one registry per process (docs/observability.md lists them). A
 * counter's inc() is a map lookup: cheap enough to call on every message whether or not anyone
 * scrapes. Process metrics (CPU, memory, event-loop lag) are added only when /metrics is served.
 */
export const registry = new Registry();

/** Runner id -> how many runs wait on it; read when /metrics is scraped, never on the hot path. */
const queueDepths = new Map<string, () => number>();

/** Reports a runner's queue depth on every scrape until the returned function is called. */
export function reportQueueDepth(runner: string, depth: () => number): () => void {
  queueDepths.set(runner, depth);
  return () => {
    queueDepths.delete(runner);
    metrics.queueDepth.remove({ runner });
  };
}

export const metrics = {
  messagesIn: new Counter({
    name: "mom_messages_in_total",
    help: "Messages published onto the bus for the runner (mom.in), by adapter and source (ingress, scheduler)",
    labelNames: ["adapter", "source"] as const,
    registers: [registry],
  }),
  messagesOut: new Counter({
    name: "mom_messages_out_total",
    help: "Answers (run ends and busy replies) an ingress rendered on its platform, by adapter",
    labelNames: ["adapter"] as const,
    registers: [registry],
  }),
  runs: new Counter({
    name: "mom_runs_total",
    help: "Agent runs ended, by outcome (stop, length, error, aborted, …)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  runDuration: new Histogram({
    name: "mom_run_duration_seconds",
    help: "Wall time of an agent run, from its start to its end, by outcome",
    labelNames: ["outcome"] as const,
    buckets: [0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800],
    registers: [registry],
  }),
  modelCalls: new Counter({
    name: "mom_model_calls_total",
    help: "Model calls (one assistant message each), by model and stop reason",
    labelNames: ["model", "outcome"] as const,
    registers: [registry],
  }),
  modelTokens: new Counter({
    name: "mom_model_tokens_total",
    help: "Model tokens, by model and kind (input, output, cache_read, cache_write)",
    labelNames: ["model", "kind"] as const,
    registers: [registry],
  }),
  modelCost: new Counter({
    name: "mom_model_cost_usd_total",
    help: "Model cost in US dollars as priced by the model's definition, by model",
    labelNames: ["model"] as const,
    registers: [registry],
  }),
  toolCalls: new Counter({
    name: "mom_tool_calls_total",
    help: "Tool calls finished, by tool and outcome (ok, error)",
    labelNames: ["tool", "outcome"] as const,
    registers: [registry],
  }),
  approvals: new Counter({
    name: "mom_approvals_total",
    help: "Approval requests resolved, by outcome (approved, denied, expired, …)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  queueDepth: new Gauge({
    name: "mom_queue_depth",
    help: "Runs waiting for their turn on this runner (all its channels), by runner id",
    labelNames: ["runner"] as const,
    registers: [registry],
    collect() {
      for (const [runner, depth] of queueDepths) this.set({ runner }, depth());
    },
  }),
  redeliveries: new Counter({
    name: "mom_redeliveries_total",
    help: "Messages a durable consumer received again (a handler failed or its ack was lost), by stream and consumer",
    labelNames: ["stream", "consumer"] as const,
    registers: [registry],
  }),
  deadLetters: new Counter({
    name: "mom_dead_letters_total",
    help: "Messages set aside on the DLQ stream, by stage",
    labelNames: ["stage"] as const,
    registers: [registry],
  }),
  platformErrors: new Counter({
    name: "mom_platform_api_errors_total",
    help: "Platform API calls that failed, by adapter",
    labelNames: ["adapter"] as const,
    registers: [registry],
  }),
  platformRateLimits: new Counter({
    name: "mom_platform_rate_limits_total",
    help: "Times a platform API told an ingress to slow down (HTTP 429 or the SDK's rate-limit event), by adapter",
    labelNames: ["adapter"] as const,
    registers: [registry],
  }),
};

let defaultsOn = false;

/** Process CPU, memory, GC and event-loop metrics; started with the HTTP server, not before. */
export function collectProcessMetrics(): void {
  if (defaultsOn) return;
  defaultsOn = true;
  collectDefaultMetrics({ register: registry, prefix: "mom_" });
}
