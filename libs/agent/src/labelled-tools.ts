import {
  createBashToolDefinition,
  createEditToolDefinition,
  createReadToolDefinition,
  createWriteToolDefinition,
  type ToolDefinition,
} from "@mariozechner/pi-coding-agent";
import type { ChannelSandbox } from "@mom/sandbox";
import type { ToolGate } from "@mom/tools";
import { createApplyPatchTool } from "./apply-patch-tool.js";
import { keepFullOutputIn } from "./full-output.js";
import { scaleImagesOffThread } from "./read-image.js";
import { gated } from "./gated-tools.js";
import { sandboxedBash, sandboxedFileOperations } from "./sandboxed-tools.js";

// Adapters show "→ <label>" while a tool runs, so every tool call must say in a few words what it
// does. pi's own tool definitions are reused unchanged; only a required `label` is added in front.
const LABEL_SCHEMA = {
  type: "string",
  description: "A short human-readable description of this call, shown to the user while it runs (e.g. \"List project files\")",
};

type AnyTool = ToolDefinition<any, any, any>;

export function withLabel(tool: AnyTool): AnyTool {
  const inner = tool.parameters as { properties?: Record<string, unknown>; required?: string[] };
  const parameters = {
    ...tool.parameters,
    properties: { label: LABEL_SCHEMA, ...(inner.properties ?? {}) },
    required: ["label", ...(inner.required ?? [])],
  };
  const strip = (args: Record<string, unknown>) => {
    const { label: _label, ...rest } = args;
    return rest;
  };
  return {
    ...tool,
    parameters: parameters as AnyTool["parameters"],
    prepareArguments: (args: unknown) => {
      const raw = (args ?? {}) as Record<string, unknown>;
      const prepared = tool.prepareArguments ? tool.prepareArguments(strip(raw)) : strip(raw);
      return { ...(prepared as object), label: raw.label };
    },
    execute: (toolCallId, params, signal, onUpdate, ctx) =>
      tool.execute(toolCallId, strip(params as Record<string, unknown>), signal, onUpdate, ctx),
  };
}

/**
 * bash, read, write, edit and apply_patch of one channel, all through its sandbox: bash runs in the executor,
 * the file tools go through its confined file access. bash keeps the tail of long output for the
 * model and the whole of it in `scratchDir`; read shows the head of a long file and how to read
 * on (the file itself is the full output).
 */
export function createMomTools(sandbox: ChannelSandbox, scratchDir: string, gate?: ToolGate): AnyTool[] {
  const cwd = sandbox.executor.view.channelDir;
  const files = sandboxedFileOperations(sandbox);
  return [
    keepFullOutputIn(scratchDir, sandbox.files, createBashToolDefinition(cwd, { operations: sandboxedBash(sandbox) }) as AnyTool),
    scaleImagesOffThread(createReadToolDefinition(cwd, { operations: files.read, autoResizeImages: false }) as AnyTool),
    createWriteToolDefinition(cwd, { operations: files.write }),
    createEditToolDefinition(cwd, { operations: files.edit }),
    createApplyPatchTool(sandbox) as AnyTool,
  ].map((t) => withLabel(gate ? gated(t as AnyTool, gate) : (t as AnyTool)));
}

export const MOM_TOOL_NAMES = ["bash", "read", "write", "edit", "apply_patch", "attach"];

/** A label for calls that came without one (some models skip optional-looking fields). */
export function fallbackLabel(toolName: string, args: unknown): string {
  const a = (args ?? {}) as Record<string, unknown>;
  if (typeof a.label === "string" && a.label.trim()) return a.label.trim();
  const detail = [a.command, a.path].find((v) => typeof v === "string") as string | undefined;
  return detail ? `${toolName} ${detail.length > 60 ? `${detail.slice(0, 57)}...` : detail}` : toolName;
}
