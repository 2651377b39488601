import type { LoadedConfig } from "@mom/config";
import { type ChannelSandbox, Sandbox } from "@mom/sandbox";
import type { ChannelStore } from "@mom/store";
import type { Logger } from "pino";

/**
 * The runner's sandbox, from config.json `sandbox` (docs/sandbox.md). Running on the host is
 * said loudly at start: every channel's commands then run as the runner's user.
 */
export function workspaceSandbox(loaded: LoadedConfig, log: Logger): Sandbox {
  const sandbox = new Sandbox(loaded.config.sandbox, loaded.paths);
  const pids = sandbox.cgroupBase ? `at most ${loaded.config.sandbox.maxProcesses ?? "the default number of"} processes per command` : "no process limit (no pids cgroup may be created here)";
  if (sandbox.kind === "host") {
    log.warn(
      { sandbox: sandbox.kind, reason: sandbox.reason },
      "SANDBOX OFF: tools run directly on this host as the runner's user, and bash can read every channel and every file the runner can. " +
        'For development only: install bubblewrap (apt-get install -y bubblewrap) and use "sandbox": {"type": "auto"} or {"type": "bwrap"}.',
    );
  } else {
    const docker = sandbox.kind === "docker";
    log.info({ sandbox: sandbox.kind, reason: sandbox.reason, network: loaded.config.sandbox.type !== "host" && loaded.config.sandbox.network === true }, `sandbox: ${sandbox.kind}${docker ? "" : `, ${pids}`}`);
    if (docker) void sandbox.check().then((problem) => problem && log.error({ sandbox: "docker" }, `sandbox: ${problem}; commands will fail until it is fixed`));
  }
  return sandbox;
}

/**
 * One channel's sandbox; the runner's own files in the channel stay read-only to its tools, and
 * the shared paths (global memory, skills) too unless the channel is in `sandbox.sharedWriters`.
 */
export function channelSandbox(sandbox: Sandbox, store: ChannelStore): ChannelSandbox {
  return sandbox.forChannel(store.dir, [store.logFile, store.contextFile, store.receiptsFile], store.qualifiedId);
}
