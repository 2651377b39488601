import { loadConfig } from "@mom/config";
import { approveTool, readToolApprovals, TOOL_APPROVALS_FILE, TOOL_ENTRY_FILES, toolApprovalState } from "@mom/tools";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CommandError } from "./command-error.js";

export const TOOLS_USAGE = `usage: mom tools <command> [--data DIR]

  list                 the workspace's custom tools: approved, new or changed since approved (and the global dir's)
  approve <name>...    approves the tool directories workspace/tools/<name> as they are now (--all: every new or changed one)

A workspace tool loads only once approved, and again only after a change is approved; tools of
tools.globalDir load without approval. --data defaults to ./data`;

/** Tool directories of a tools dir, as the registry scans them. */
function toolDirs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => !n.startsWith(".") && !n.startsWith("_") && n !== "node_modules" && statSync(join(dir, n)).isDirectory())
    .filter((n) => TOOL_ENTRY_FILES.some((f) => existsSync(join(dir, n, f))))
    .sort();
}

/** `mom tools list|approve`: returns the text to print. */
export async function toolsCommand(argv: string[]): Promise<string> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { data: { type: "string", default: "data" }, all: { type: "boolean", default: false } } });
  const [sub = "list", ...names] = positionals;
  const loaded = loadConfig(values.data!);
  const toolsDir = join(loaded.paths.workspaceDir, "tools");
  const file = join(loaded.paths.dataDir, TOOL_APPROVALS_FILE);
  const approvals = readToolApprovals(file);
  const present = toolDirs(toolsDir);
  switch (sub) {
    case "list": {
      const lines = [`workspace tools (${toolsDir}):`];
      if (present.length === 0) lines.push("  none");
      for (const name of present) {
        const { state, digest } = await toolApprovalState(approvals, join(toolsDir, name));
        const when = state !== "new" ? ` (approved ${approvals[name]!.approvedAt})` : "";
        lines.push(`  ${name}  ${state === "approved" ? "approved" : state === "new" ? "NEW: not loaded until approved" : "CHANGED: not loaded until approved again"}${when}  sha256 ${digest.sha256.slice(0, 12)}  ${digest.files.length} files`);
      }
      const global = loaded.config.tools.globalDir;
      if (global) lines.push(`global tools (${global}, no approval needed): ${toolDirs(global).join(", ") || "none"}`);
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
        const { digest } = await toolApprovalState(approvals, join(toolsDir, name));
        approveTool(file, name, digest.sha256);
        lines.push(`approved ${name}: sha256 ${digest.sha256.slice(0, 12)}, ${digest.files.length} files (${digest.files.join(", ")})`);
      }
      return lines.join("\n") || "nothing to approve";
    }
    default:
      throw new CommandError(TOOLS_USAGE);
  }
}
