import { describeType, type MomTool } from "@mom/tools";
import type { CatalogueEntry } from "./script-pool.js";

/** Past this many characters the prompt lists only ids; the script can search and describe. */
export const DECLARATIONS_BUDGET = 12_000;

const oneLine = (s: string) => s.replace(/\s+/g, " ").trim();
const key = (part: string) => (/^[A-Za-z_$][\w$]*$/.test(part) ? part : JSON.stringify(part));

/** `create(input: { dir: string, out?: string }): Promise<Result>;` with its description as a comment. */
export function declarationOf(tool: MomTool, name = `tools.${tool.id}`, quote = false): string {
  const input = describeType(tool.parameters);
  return `/** ${oneLine(tool.description).replaceAll("*/", "* /")} (risk: ${tool.risk}) */\n${quote ? key(name) : name}(input: ${input === "object" ? "Record<string, unknown>" : input}): Promise<Result>;`;
}

export function catalogueOf(tools: MomTool[]): CatalogueEntry[] {
  return tools.map((t) => ({ id: t.id, risk: t.risk, description: oneLine(t.description), declaration: declarationOf(t) }));
}

const RESULT_TYPE = "type Result = { ok: true; text: string; details?: unknown } | { ok: false; error: string };";
const HELPERS = [
  "call(id: string, input: object): Promise<Result>;",
  "search(query: string): { id: string; risk: string; description: string }[];",
  "describe(id: string): string | null;",
];

/**
 * TypeScript declarations of `tools` for the callable tools, nested by the parts of their ids
 * (`tools.github.issue.get(...)`), generated from their TypeBox schemas.
 */
export function toolDeclarations(tools: MomTool[]): string {
  interface Node {
    children: Map<string, Node>;
    tool?: MomTool;
  }
  const root: Node = { children: new Map() };
  for (const tool of [...tools].sort((a, b) => a.id.localeCompare(b.id))) {
    let at = root;
    for (const part of tool.id.split(".")) {
      if (!at.children.has(part)) at.children.set(part, { children: new Map() });
      at = at.children.get(part)!;
    }
    at.tool = tool;
  }
  const indent = (text: string, by: string) => text.split("\n").map((l) => by + l).join("\n");
  const render = (node: Node, depth: number): string[] =>
    [...node.children].map(([name, child]) =>
      child.tool ? indent(declarationOf(child.tool, name, true), "  ".repeat(depth)) : `${"  ".repeat(depth)}${key(name)}: {\n${render(child, depth + 1).join("\n")}\n${"  ".repeat(depth)}};`,
    );
  return [RESULT_TYPE, "declare const tools: {", ...render(root, 1), ...HELPERS.map((h) => `  ${h}`), "};"].join("\n");
}

/** The system prompt's code-mode section: how run_code works and what `tools` holds. */
export function formatCodeModeForPrompt(tools: MomTool[], toolName: string): string {
  if (tools.length === 0) return "";
  const full = toolDeclarations(tools);
  const declarations =
    full.length <= DECLARATIONS_BUDGET
      ? full
      : [RESULT_TYPE, `// ${tools.length} tools: ${tools.map((t) => t.id).join(", ")}`, "// tools.describe(id) gives one's declaration; tools.search(words) finds them.", "declare const tools: {", ...HELPERS.map((h) => `  ${h}`), "  [namespace: string]: any;", "};"].join("\n");
  return [
    "## Code mode",
    "",
    `\`${toolName}\` runs a TypeScript script in a sandbox with no network, files, processes or timers. Use it when a task needs several custom-tool calls (a loop, a filter, combining results): one ${toolName} call instead of many turns.`,
    "Inside, `tools.<id>(input)` calls a custom tool through the same policy, approvals and receipts as invoke_tool, and always resolves to a Result: check `ok` (a denied or failed call is `{ ok: false, error }`, not an exception).",
    "Use `await`; `return` a JSON value to hand it back; `console.log` prints (both are capped). Keep scripts short; CPU time and memory are limited.",
    "",
    "```ts",
    declarations,
    "```",
  ].join("\n");
}
