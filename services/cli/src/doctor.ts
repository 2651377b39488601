import { ModelSetupError, resolveModel, shownEndpoint } from "@mom/agent";
import { Bus, serverCaveat } from "@mom/bus";
import { runnersBucket } from "@mom/contracts";
import { authConfigIssues, toolHostOptions } from "@mom/auth";
import { type AuthProfile, ConfigError, createLogger, type LoadedConfig, loadAuthProfiles, loadConfig, parseModelRef, redactNatsUrl, unsetEnvRefs } from "@mom/config";
import { Sandbox } from "@mom/sandbox";
import { spawnSync } from "node:child_process";
import { CustomToolRegistry, createHostToolApi, requireApproval, TOOL_APPROVALS_FILE } from "@mom/tools";
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { findNatsServerBinary, NATS_INSTALL_HINT } from "./local-nats.js";
import { probeModel } from "./model-probe.js";
import { natsTargetFor } from "./nats-target.js";
import { checkRetention } from "./retention-check.js";

const firstLine = (s: string) => s.trim().split("\n")[0] ?? "";

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
  /** Only informs; does not fail the doctor. */
  optional?: boolean;
}

function hasCommand(cmd: string, args: string[]): boolean {
  return spawnSync(cmd, args, { stdio: "ignore" }).status === 0;
}

async function checkNats(loaded: LoadedConfig, url: string | undefined, upsOwn: boolean): Promise<Check> {
  if (!url) {
    const bin = findNatsServerBinary();
    return bin
      ? { name: "NATS", ok: true, detail: `NATS_URL unset: \`mom up\` will start ${bin} with JetStream under ${loaded.paths.dataDir}/nats; \`mom runner\`/\`mom ingress\` use ${redactNatsUrl(loaded.config.nats.url)}` }
      : { name: "NATS", ok: false, detail: NATS_INSTALL_HINT };
  }
  const shown = redactNatsUrl(url);
  let bus: Bus | undefined;
  try {
    bus = await Bus.connect({ url, name: "mom-doctor", namespace: loaded.config.nats.namespace, logger: createLogger("mom-doctor", { level: "silent" }) });
    const info = await bus.accountInfo();
    const caveat = serverCaveat(bus.serverVersion, bus.serverInfo?.cluster);
    return { name: "NATS", ok: true, detail: `${upsOwn ? "the running `mom up`'s own NATS, " : ""}${shown} reachable (nats-server ${bus.serverVersion}), JetStream on (${info.streams} streams); ${await describeRunners(bus)}${caveat ? `. ${caveat}` : ""}` };
  } catch (err) {
    // Bus.connect's messages name the server and say how to fix it (JetStream off, refused, auth).
    return { name: "NATS", ok: false, detail: (err as Error).message };
  } finally {
    await bus?.drain().catch(() => {});
  }
}

/**
 * Runner replicas as their heartbeats show them. Scale-out needs nothing newer than 2.9 (KV
 * compare-and-set; docs/scaling.md), so it is always available.
 */
async function describeRunners(bus: Bus): Promise<string> {
  const kv = await bus.existingKeyValue(runnersBucket(bus.subjects.namespace));
  const live: string[] = [];
  if (kv) {
    for await (const key of await kv.keys()) {
      const e = await kv.get(key);
      if (e?.operation !== "PUT") continue;
      try {
        const hb = JSON.parse(e.string()) as { id: string; channels: number; leaving?: boolean };
        live.push(`${hb.id} (${hb.channels} channels${hb.leaving ? ", leaving" : ""})`);
      } catch {
        live.push(`${key} (unreadable heartbeat)`);
      }
    }
  }
  return `scale-out available (any number of \`mom runner\` replicas); runners alive: ${live.length ? live.join(", ") : "none"}`;
}

/** Everything that must be right before mom can answer, each with what to do when it is not. */
export async function runDoctor(dataDir: string): Promise<Check[]> {
  const checks: Check[] = [];
  let loaded: LoadedConfig;
  if (!existsSync(dataDir) || !statSync(dataDir).isDirectory()) {
    checks.push({ name: "config", ok: false, detail: `no data dir ${dataDir} (nor ${join(dataDir, "config.json")}): check the path; \`mom up ${dataDir}\` creates one` });
    return checks;
  }
  try {
    loaded = loadConfig(dataDir);
    const summary = `model ${loaded.config.model}, adapters: ${Object.keys(loaded.config.adapters).join(", ") || "none"}`;
    checks.push(
      existsSync(loaded.paths.configFile)
        ? { name: "config", ok: true, detail: `${loaded.paths.configFile} (${summary})` }
        : { name: "config", ok: false, optional: true, detail: `no ${loaded.paths.configFile}: built-in defaults (${summary}); see docs/config.md` },
    );
  } catch (err) {
    checks.push({ name: "config", ok: false, detail: err instanceof ConfigError ? err.message : String(err) });
    return checks;
  }
  let profiles: AuthProfile[] = [];
  try {
    profiles = loadAuthProfiles(loaded.paths.authProfilesFile).profiles;
    const issues = authConfigIssues(loaded.config, profiles);
    if (issues.length) throw new ConfigError(loaded.paths.configFile, issues);
    const mode = existsSync(loaded.paths.authProfilesFile) ? statSync(loaded.paths.authProfilesFile).mode & 0o777 : undefined;
    // Group read is what Kubernetes' fsGroup gives a mounted Secret; anything more is too open.
    const open = mode !== undefined && (mode & 0o037) !== 0;
    checks.push({
      name: "auth profiles",
      ok: !open,
      optional: true,
      detail: mode === undefined ? `none (${loaded.paths.authProfilesFile}; \`mom auth add\` creates it)` : `${profiles.length} in ${loaded.paths.authProfilesFile}${open ? ` — readable by others (mode ${mode.toString(8)}): chmod 600 it` : ""}`,
    });
  } catch (err) {
    checks.push({ name: "auth profiles", ok: false, detail: err instanceof ConfigError ? err.message : String(err) });
  }
  try {
    const { provider, modelId } = parseModelRef(loaded.config.model);
    const resolved = resolveModel(provider, modelId, loaded.paths, (p) => profiles.some((x) => x.provider === p));
    const { model } = resolved;
    const problem = await probeModel(resolved, profiles, loaded.paths.dataDir, loaded.paths.modelsFile);
    checks.push(
      problem
        ? { name: "model", ok: false, detail: `credentials found, but a one-word test call failed: ${firstLine(problem)}` }
        : { name: "model", ok: true, detail: `${model.provider}/${model.id} (${model.api}, ${shownEndpoint(model.baseUrl)}), credentials found, a one-word test call answered` },
    );
  } catch (err) {
    checks.push({ name: "model", ok: false, detail: err instanceof ModelSetupError ? err.message : String(err) });
  }
  // The NATS this data dir's services use: the named one, or the one a running `mom up` started.
  const nats = await natsTargetFor(loaded, { startStore: false }).catch(() => undefined);
  const natsUrl = nats && nats.source !== "default" ? nats.url : undefined;
  checks.push(await checkNats(loaded, natsUrl, nats?.source === "mom up"));
  checks.push(await checkRetention(loaded, natsUrl));
  try {
    // The doctor looks, it does not create: a missing workspace is made by the runner in the data dir.
    const there = existsSync(loaded.paths.workspaceDir);
    accessSync(there ? loaded.paths.workspaceDir : loaded.paths.dataDir, constants.W_OK);
    checks.push({ name: "workspace", ok: true, detail: there ? `${loaded.paths.workspaceDir} writable` : `${loaded.paths.workspaceDir} not created yet (the runner creates it; ${loaded.paths.dataDir} is writable)` });
  } catch (err) {
    checks.push({ name: "workspace", ok: false, detail: `${loaded.paths.workspaceDir}: ${(err as Error).message}` });
  }
  checks.push(await checkCustomTools(loaded));
  checks.push(...(await checkSandbox(loaded)));
  const unset = unsetEnvRefs(loaded.config);
  if (unset.length) {
    const list = unset.map((u) => `${u.variable} (${u.path}, needed by ${u.path.startsWith("/adapters/") ? `\`mom ingress ${u.path.split("/")[2]}\`` : "the runner"})`);
    checks.push({ name: "secrets", ok: false, optional: true, detail: `not set here: ${list.join(", ")}; each service needs only its own` });
  }
  return checks;
}

/** Which executor the runner will use, why, what it cannot do here, and which per-command limits hold. */
async function checkSandbox(loaded: LoadedConfig): Promise<Check[]> {
  let sandbox: Sandbox;
  try {
    sandbox = new Sandbox(loaded.config.sandbox, loaded.paths);
  } catch (err) {
    return [{ name: "sandbox", ok: false, detail: (err as Error).message }];
  }
  const report = sandbox.limitsReport();
  const off = report.filter((l) => !l.on);
  const limits: Check = {
    name: "sandbox limits",
    ok: off.length === 0,
    optional: true,
    detail: report.map((l) => `${l.on ? "" : "NOT IN FORCE: "}${l.name}: ${l.detail}`).join("; "),
  };
  return [await sandboxChoice(loaded, sandbox), limits];
}

async function sandboxChoice(loaded: LoadedConfig, sandbox: Sandbox): Promise<Check> {
  const wanted = loaded.config.sandbox.type;
  const pids = sandbox.cgroupBase ? "process limit per command on" : "no process limit (no pids cgroup may be created here)";
  if (sandbox.kind === "host") {
    const hint = hasCommand("bwrap", ["--version"]) ? "bubblewrap is installed but cannot create namespaces here (in a container: allow user namespaces)" : "install bubblewrap: sudo apt-get install -y bubblewrap";
    return wanted === "host"
      ? { name: "sandbox", ok: false, optional: true, detail: `host (configured): NO CHANNEL ISOLATION — tools run unsandboxed as the runner's user, for development only; ${pids}` }
      : { name: "sandbox", ok: false, detail: `NO CHANNEL ISOLATION — ${sandbox.reason}; the runner refuses to start so (set sandbox.type "host" to run without isolation on purpose); ${hint}` };
  }
  const problem = await sandbox.check();
  if (problem) return { name: "sandbox", ok: false, detail: `${sandbox.kind}: ${problem}` };
  if (sandbox.kind !== "docker" && !hasCommand("bash", ["-c", "true"])) return { name: "sandbox", ok: false, detail: "bash not found: install bash" };
  return { name: "sandbox", ok: true, detail: `${sandbox.kind} (${sandbox.reason}); network ${loaded.config.sandbox.type !== "host" && loaded.config.sandbox.network ? "on" : "off"}; ${pids}` };
}

export function formatChecks(checks: Check[]): string {
  return checks.map((c) => `${c.ok ? "✓" : c.optional ? "!" : "✗"} ${c.name}: ${c.detail}`).join("\n");
}

/** Custom host tools load like the runner loads them; a broken one is named, the rest still work. */
async function checkCustomTools(loaded: LoadedConfig): Promise<Check> {
  const { paths, config } = loaded;
  const dirs = [...(config.tools.globalDir ? [config.tools.globalDir] : []), join(paths.workspaceDir, "tools")];
  const registry = new CustomToolRegistry(dirs, createHostToolApi(toolHostOptions(loaded)), {
    admit: requireApproval(join(paths.dataDir, TOOL_APPROVALS_FILE), join(paths.workspaceDir, "tools")),
  });
  try {
    await registry.reload();
    const ids = registry.tools().map((t) => t.id);
    const problems = registry.problems();
    const loadedText = `${ids.length} loaded${ids.length ? ` (${ids.join(", ")})` : ""}`;
    if (problems.length === 0) return { name: "custom tools", ok: true, detail: loadedText };
    return { name: "custom tools", ok: false, optional: true, detail: `${loadedText}; not loaded: ${problems.map((p) => `${p.path}: ${p.error}`).join("; ")}` };
  } finally {
    registry.close();
  }
}
