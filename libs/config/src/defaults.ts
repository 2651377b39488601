import type { MomConfig, MomConfigFile } from "./schema.js";

/** A fresh copy each call, so one service mutating its config cannot leak into another's. */
export function defaultConfig(): MomConfig {
  return {
    model: "anthropic/claude-sonnet-4-5",
    thinkingLevel: "off",
    nats: { url: "nats://127.0.0.1:4222", namespace: "mom", streams: { maxAgeHours: 168, duplicateWindowSeconds: 120, replicas: 1 } },
    adapters: { cli: { type: "cli" } },
    sandbox: { type: "auto" },
    runner: { idleEvictMinutes: 30, maxConcurrentRuns: 16, runTimeoutMinutes: 30, leaseSeconds: 20, shutdownGraceSeconds: 20, maxCrashes: 3, publishRetrySeconds: 90, listChannels: false },
    attachments: { maxBytes: 20 * 1024 * 1024 },
    scheduler: { graceMinutes: 60, maxQueuedPerChannel: 100, maxPerMinutePerChannel: 10, watch: "events", pollIntervalMs: 2000 },
    channels: {},
    tools: {},
    policy: { tools: {}, adapters: {}, channels: {}, providers: {}, sandbox: {}, ask: [], autoAllow: [], approvalTimeoutSeconds: 300, requesterMayApprove: false },
    auth: { order: {} },
    limits: {},
    log: { level: "info" },
    observability: {},
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
    runner: { ...d.runner, ...file.runner },
    attachments: { ...d.attachments, ...file.attachments },
    scheduler: { ...d.scheduler, ...file.scheduler },
    policy: { ...d.policy, ...file.policy },
    tools: { ...d.tools, ...file.tools },
    channels: file.channels ?? d.channels,
    auth: { ...d.auth, ...file.auth },
    limits: file.limits ?? d.limits,
    log: { ...d.log, ...file.log },
    observability: { ...d.observability, ...file.observability },
  };
}
