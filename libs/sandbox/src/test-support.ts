import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecRequest, ExecResult, Executor } from "./executor.js";

/** A data dir with a config, a custom tool and two channels, `cli/a` (ours) and `cli/b` (another's). */
export function makeDataDir(): { dataDir: string; workspaceDir: string; channelA: string; channelB: string } {
  const dataDir = mkdtempSync(join(tmpdir(), "mom-sandbox-"));
  const workspaceDir = join(dataDir, "workspace");
  const channelA = join(workspaceDir, "channels", "cli", "a");
  const channelB = join(workspaceDir, "channels", "cli", "b");
  for (const d of [channelA, channelB, join(workspaceDir, "tools", "x")]) mkdirSync(d, { recursive: true });
  writeFileSync(join(dataDir, "config.json"), '{"adapters":{"slack":{"type":"slack","botToken":"xoxb-config-secret","appToken":"xapp-1"}}}');
  writeFileSync(join(workspaceDir, "tools", "x", "index.mjs"), "export default {};\n");
  writeFileSync(join(channelB, "log.jsonl"), '{"text":"channel b private"}\n');
  writeFileSync(join(channelB, "MEMORY.md"), "b's memory\n");
  return { dataDir, workspaceDir, channelA, channelB };
}

/** Runs a command and returns its whole (small) output as text. */
export async function run(executor: Executor, command: string, req: Partial<ExecRequest> = {}): Promise<ExecResult & { output: string }> {
  const chunks: Buffer[] = [];
  const result = await executor.exec({ command, onData: (c) => chunks.push(c), ...req });
  return { ...result, output: Buffer.concat(chunks).toString("utf8") };
}

/** Pids of live processes whose command line contains `needle`. */
export function processesWith(needle: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").join(" ").includes(needle)) found.push(Number(name));
    } catch {
      // gone
    }
  }
  return found;
}
