import { INVOKE_TOOL_NAME } from "./invoke-tool.js";
import type { MomTool } from "./tool-contract.js";
import { describeConstraints, describeType } from "./tool-schema.js";

const hasDefault = (s: unknown) => typeof s === "object" && s !== null && "default" in s;
const oneLine = (s: string) => s.replace(/\s+/g, " ").trim();

/**
 * The system prompt's "Custom tools" section: how to call them through invoke_tool, then per
 * tool its id, risk and description and one line per parameter (name, type, required or not,
 * constraints, description). Empty when there are no tools.
 */
export function formatCustomToolsForPrompt(tools: MomTool[]): string {
  if (tools.length === 0) return "";
  const lines = [
    "## Custom tools",
    "",
    `Host tools installed for this workspace. Call one with the \`${INVOKE_TOOL_NAME}\` tool: \`{"tool": "<id>", "args": {...}}\`.`,
    "Arguments are checked against the parameters below; a call with invalid arguments fails with the reason — fix them and call again.",
    "Risk: read = only looks; write = creates or changes things; destructive = deletes or cannot be undone. Write and destructive calls may need a person's approval and can be denied.",
  ];
  for (const tool of [...tools].sort((a, b) => a.id.localeCompare(b.id))) {
    lines.push("", `- ${tool.id} (risk: ${tool.risk}): ${oneLine(tool.description)}`);
    const schema = tool.parameters as { properties?: Record<string, unknown>; required?: string[] };
    const props = Object.entries(schema.properties ?? {});
    const required = new Set(schema.required ?? []);
    if (props.length === 0) {
      lines.push("  args: none");
      continue;
    }
    for (const [name, prop] of props) {
      const facts = [describeType(prop), required.has(name) && !hasDefault(prop) ? "required" : "optional", ...describeConstraints(prop)];
      const desc = typeof (prop as { description?: unknown }).description === "string" ? oneLine((prop as { description: string }).description) : "";
      lines.push(`  - ${name} (${facts.join(", ")})${desc ? `: ${desc}` : ""}`);
    }
  }
  return lines.join("\n");
}
