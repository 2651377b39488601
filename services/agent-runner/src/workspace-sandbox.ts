import type { LoadedConfig } from "@mom/config";
import { addReadinessWarning } from "@mom/observability";
import { type ChannelSandbox, Sandbox } from "@mom/sandbox";
import type { ChannelStore } from "@mom/store";
import type { Logger } from "pino";

/**
 * The runner's sandbox, from config.json `sandbox` (docs/sandbox.md). A runner that cannot isolate
 * channels does not start unless the operator said `"type": "host"` explicitly; then it says
 * NO CHANNEL ISOLATION at start and in every /readyz answer. The per-command limits in force are
 * logged at start.
 */
export function workspaceSandbox(loaded: LoadedConfig, log: Logger): Sandbox {
  const sandbox = new Sandbox(loaded.config.sandbox, loaded.paths);
  if (sandbox.kind === "host" && loaded.config.sandbox.type !== "host") {
    throw new Error(
      `NO CHANNEL ISOLATION: ${sandbox.reason}. The runner refuses to start: every channel's commands would run unsandboxed in this process's host or container. ` +
        'Make bubblewrap work (apt-get install -y bubblewrap; in a container or Kubernetes: docs/sandbox.md, k8s/README.md "Sandboxes"), or set "sandbox": {"type": "host"} in config.json to run without isolation on purpose.',
    );
  }
  const limits = sandbox.limitsReport();
  const limitsLine = limits.map((l) => `${l.on ? "" : "NOT IN FORCE: "}${l.name}: ${l.detail}`).join("; ");
  if (sandbox.kind === "host") {
    const warning = "NO CHANNEL ISOLATION: sandbox.type is \"host\" — tools run directly on this host as the runner's user; bash can read every channel and every file the runner can";
    addReadinessWarning("agent-runner", warning);
    log.warn(
      { sandbox: sandbox.kind, reason: sandbox.reason, limits: limitsLine },
      `SANDBOX OFF, ${warning}. For development only: install bubblewrap (apt-get install -y bubblewrap) and use "sandbox": {"type": "auto"} or {"type": "bwrap"}.`,
    );
  } else {
    const docker = sandbox.kind === "docker";
    log.info({ sandbox: sandbox.kind, reason: sandbox.reason, network: loaded.config.sandbox.type !== "host" && loaded.config.sandbox.network === true, limits: limitsLine }, `sandbox: ${sandbox.kind}; ${limitsLine}`);
    if (docker) void sandbox.check().then((problem) => problem && log.error({ sandbox: "docker" }, `sandbox: ${problem}; commands will fail until it is fixed`));
  }
  return sandbox;
}

/**
 * One channel's sandbox; the runner's own files in the channel stay read-only to its tools, and
 * the shared paths (global memory, skills) too unless the channel is in `sandbox.sharedWriters`.
 */
export function channelSandbox(sandbox: Sandbox, store: ChannelStore): ChannelSandbox {
  return sandbox.forChannel(store.dir, [store.logFile, store.contextFile, store.receiptsFile, store.jobsFile], store.qualifiedId);
}
