import { loadConfig } from "@mom/config";
import { approveTool, readToolApprovals, TOOL_APPROVALS_FILE, toolApprovalState, workspaceToolDirs } from "@mom/tools";
import { userInfo } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { registerTools } from "./command-spec.js";
import { dataDirOf, existingDataDir, strict } from "./data-dir.js";
import { CommandError } from "./command-error.js";

/** Who runs the command, as the approval records it (a container's uid may have no name). */
function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? "?"}`;
  }
}

/** `mom tools …` with its arguments as typed, e.g. ["approve", "greet", "--data", "DIR"]. */
export async function toolsCommand(argv: string[]): Promise<string> {
  let text = "";
  const root = strict(new Command("mom"), (t) => void process.stderr.write(t));
  registerTools(root, (t) => (text = t));
  await root.parseAsync(["tools", ...argv], { from: "user" });
  return text;
}

export async function toolsRun(sub: "list" | "approve", names: string[], values: { data?: string; all?: boolean }): Promise<string> {
  const loaded = loadConfig(existingDataDir(dataDirOf(values)));
  const toolsDir = join(loaded.paths.workspaceDir, "tools");
  const file = join(loaded.paths.dataDir, TOOL_APPROVALS_FILE);
  const approvals = readToolApprovals(file);
  const present = workspaceToolDirs(toolsDir);
  switch (sub) {
    case "list": {
      const lines = [`workspace tools (${toolsDir}):`];
      if (present.length === 0) lines.push("  none");
      for (const name of present) {
        const { state, digest } = await toolApprovalState(approvals, join(toolsDir, name));
        const a = approvals[name];
        const when = a ? ` (approved ${a.approvedAt}${a.approvedBy ? ` by ${a.approvedBy}` : ""})` : "";
        lines.push(`  ${name}  ${state === "approved" ? "approved" : state === "new" ? "NEW: not loaded until approved" : "CHANGED: not loaded until approved again"}${when}  sha256 ${digest.sha256.slice(0, 12)}  ${digest.files.length} files`);
      }
      const global = loaded.config.tools.globalDir;
      if (global) lines.push(`global tools (${global}, no approval needed): ${workspaceToolDirs(global).join(", ") || "none"}`);
      return lines.join("\n");
    }
    case "approve": {
      const targets = values.all ? [] : names;
      if (values.all) {
        for (const name of present) if ((await toolApprovalState(approvals, join(toolsDir, name))).state !== "approved") targets.push(name);
      } else if (names.length === 0) throw new CommandError("mom tools approve: name the tool directories (mom tools list), or --all");
      const lines: string[] = [];
      for (const name of targets) {
        if (!present.includes(name)) throw new CommandError(`mom tools approve: no tool ${name} in ${toolsDir} (tools: ${present.join(", ") || "none"})`);
        const digest = await approveTool(file, join(toolsDir, name), { by: `${osUser()} (mom tools approve)` });
        lines.push(`approved ${name}: sha256 ${digest.sha256.slice(0, 12)}, ${digest.files.length} files (${digest.files.join(", ")})`);
      }
      return lines.join("\n") || "nothing to approve";
    }
  }
}
