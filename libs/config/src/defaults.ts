import type { MomConfig, MomConfigFile } from "./schema.js";

/** A fresh copy each call, so one service mutating its config cannot leak into another's. */
export function defaultConfig(): MomConfig {
  return {
    model: "anthropic/claude-sonnet-4-5",
    thinkingLevel: "off",
    nats: { url: "nats://127.0.0.1:4222", namespace: "mom", streams: { maxAgeHours: 168, duplicateWindowSeconds: 120, replicas: 1 } },
    adapters: { cli: { type: "cli" } },
    sandbox: { type: "auto" },
    runner: { idleEvictMinutes: 30, maxConcurrentRuns: 16, runTimeoutMinutes: 30, leaseSeconds: 20, shutdownGraceSeconds: 20, maxCrashes: 3, publishRetrySeconds: 90, listChannels: false, jobs: { maxPerChannel: 4, maxRuntimeMinutes: 60, outputKeptBytes: 64 * 1024 } },
    attachments: { maxBytes: 20 * 1024 * 1024, downloadSeconds: 120 },
    scheduler: { graceMinutes: 60, maxQueuedPerChannel: 100, maxPerMinutePerChannel: 10, watch: "events", pollIntervalMs: 2000 },
    channels: {},
    tools: { settings: {} },
    web: { allow: ["*"], deny: [], privateRanges: [], maxBytes: 5 * 1024 * 1024, maxChars: 50_000, timeoutSeconds: 20, maxRedirects: 5 },
    spawn: { tokens: 100_000, maxTokens: 500_000, seconds: 300, maxSeconds: 1_800, maxPerRun: 8 },
    send: { routes: [], timeoutSeconds: 30 },
    policy: { tools: {}, adapters: {}, channels: {}, providers: {}, sandbox: {}, ask: [], autoAllow: [], approvalTimeoutSeconds: 300, requesterMayApprove: false },
    auth: { order: {} },
    limits: {},
    log: { level: "info" },
    observability: {},
    console: { port: 8480, host: "127.0.0.1", users: {} },
  };
}

/**
 * Objects with fixed keys merge key by key; `adapters` and `sandbox` are replaced whole, because
 * declaring any adapter means "these adapters", not "these plus the default cli".
 */
export function withDefaults(file: MomConfigFile): MomConfig {
  const d = defaultConfig();
  return {
    model: file.model ?? d.model,
    thinkingLevel: file.thinkingLevel ?? d.thinkingLevel,
    nats: { ...d.nats, ...file.nats, streams: { ...d.nats.streams, ...file.nats?.streams } },
    adapters: file.adapters ?? d.adapters,
    sandbox: file.sandbox ?? d.sandbox,
    runner: { ...d.runner, ...file.runner, jobs: { ...d.runner.jobs, ...file.runner?.jobs } },
    attachments: { ...d.attachments, ...file.attachments },
    scheduler: { ...d.scheduler, ...file.scheduler },
    policy: { ...d.policy, ...file.policy },
    tools: { ...d.tools, ...file.tools },
    web: { ...d.web, ...file.web },
    spawn: { ...d.spawn, ...file.spawn },
    send: { ...d.send, ...file.send },
    channels: file.channels ?? d.channels,
    auth: { ...d.auth, ...file.auth },
    limits: file.limits ?? d.limits,
    log: { ...d.log, ...file.log },
    observability: { ...d.observability, ...file.observability },
    console: { ...d.console, ...file.console },
  };
}
