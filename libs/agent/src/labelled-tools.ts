import {
  createBashToolDefinition,
  createEditToolDefinition,
  createReadToolDefinition,
  createWriteToolDefinition,
  type ToolDefinition,
} from "@mariozechner/pi-coding-agent";
import type { ChannelSandbox } from "@mom/sandbox";
import { formatFileSize } from "@mom/store";
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
  return [
    keepFullOutputIn(scratchDir, sandbox.files, createBashToolDefinition(cwd, { operations: sandboxedBash(sandbox) }) as AnyTool),
    scaleImagesOffThread(boundedRead(cwd, sandbox)),
    createWriteToolDefinition(cwd, { operations: sandboxedFileOperations(sandbox).write }),
    boundedEdit(cwd, sandbox),
    createApplyPatchTool(sandbox) as AnyTool,
  ].map((t) => withLabel(gate ? gated(t as AnyTool, gate) : (t as AnyTool)));
}

/**
 * Most bytes of a text file `read` takes (images keep the sandbox's whole-file cap,
 * `sandbox.maxOutputBytes`). pi's read splits the whole file into an array of lines, copies and
 * joins it and splits it again, synchronously on the runner's event loop, which serves every
 * channel, to show at most 2,000 lines or 50 KB of it: about 24 bytes of heap per line and 3 per
 * byte. A 16 MiB file of newlines (what a command in the channel writes in a moment) held ~400 MB
 * of heap and the loop for ~1 s per call; a 1 MiB one holds ~25 MB for a few tens of ms. Bigger
 * files are read in parts with bash (sed -n, head, tail, grep), which runs in the sandbox.
 */
export const MAX_READ_TEXT_BYTES = 1024 * 1024;

/** pi's read, refusing a text file bigger than MAX_READ_TEXT_BYTES before reading it. */
function boundedRead(cwd: string, sandbox: ChannelSandbox): AnyTool {
  const { read } = sandboxedFileOperations(sandbox);
  const tool = createReadToolDefinition(cwd, { operations: read, autoResizeImages: false }) as AnyTool;
  return {
    ...tool,
    execute(toolCallId, params: { path?: unknown }, signal, onUpdate, ctx) {
      const shown = typeof params?.path === "string" ? params.path : "the file";
      // pi sniffs the type first and then reads the whole file, as an image or as text.
      let image = false;
      const detectImageMimeType = async (p: string) => {
        const mime = (await read.detectImageMimeType?.(p)) ?? null;
        image = mime !== null;
        return mime;
      };
      const readFile = async (p: string) => {
        if (image) return read.readFile(p);
        const { size } = await sandbox.files.readTail(p, 0);
        if (size > MAX_READ_TEXT_BYTES) {
          throw new Error(
            `${shown}: too large for the read tool (${formatFileSize(size)}; it takes text files of at most ${formatFileSize(MAX_READ_TEXT_BYTES)}). Read parts of it with bash: sed -n '1,200p' ${shown}, head, tail or grep.`,
          );
        }
        return sandbox.files.readFile(p, MAX_READ_TEXT_BYTES);
      };
      const bounded = createReadToolDefinition(cwd, { operations: { ...read, detectImageMimeType, readFile }, autoResizeImages: false }) as AnyTool;
      return bounded.execute(toolCallId, params, signal, onUpdate, ctx);
    },
  };
}

/**
 * File bytes × edits one `edit` call may go over. pi's edit normalises the whole file once per
 * edit (to count the matches) and then diffs all of it, synchronously on the runner's event loop,
 * which serves every channel: 100 one-line edits of a 2 MB file held it for seconds, of a 16 MB
 * file (what a read may return) for minutes. 4 MB is one edit of a 4 MB file, ten of 400 KB.
 */
export const MAX_EDIT_WORK_BYTES = 4 * 1024 * 1024;

/** pi's edit, reading at most MAX_EDIT_WORK_BYTES / (the call's number of edits) of the file. */
function boundedEdit(cwd: string, sandbox: ChannelSandbox): AnyTool {
  const { edit } = sandboxedFileOperations(sandbox);
  const tool = createEditToolDefinition(cwd, { operations: edit }) as AnyTool;
  return {
    ...tool,
    execute(toolCallId, params: { path?: unknown; edits?: unknown[] }, signal, onUpdate, ctx) {
      const n = Array.isArray(params?.edits) ? Math.max(1, params.edits.length) : 1;
      const limit = Math.floor(MAX_EDIT_WORK_BYTES / n);
      const shown = typeof params?.path === "string" ? params.path : "the file";
      const readFile = async (p: string) => {
        const { size } = await sandbox.files.readTail(p, 0);
        if (size > limit) {
          throw new Error(
            n === 1
              ? `${shown}: too large to edit (${formatFileSize(size)}; the edit tool takes files of at most ${formatFileSize(MAX_EDIT_WORK_BYTES)}). Use apply_patch or bash (sed).`
              : `${shown}: too large for ${n} edits in one call (${formatFileSize(size)}; the edit tool goes over the whole file once per edit, so ${n} edits may take a file of at most ${formatFileSize(limit)}, one edit ${formatFileSize(MAX_EDIT_WORK_BYTES)}). Use apply_patch for many changes to a big file, or bash (sed).`,
          );
        }
        return sandbox.files.readFile(p, limit);
      };
      return (createEditToolDefinition(cwd, { operations: { ...edit, readFile } }) as AnyTool).execute(toolCallId, params, signal, onUpdate, ctx);
    },
  };
}

export const MOM_TOOL_NAMES = ["bash", "read", "write", "edit", "apply_patch", "attach"];

/** A label for calls that came without one (some models skip optional-looking fields). */
export function fallbackLabel(toolName: string, args: unknown): string {
  const a = (args ?? {}) as Record<string, unknown>;
  if (typeof a.label === "string" && a.label.trim()) return a.label.trim();
  const detail = [a.command, a.path].find((v) => typeof v === "string") as string | undefined;
  return detail ? `${toolName} ${detail.length > 60 ? `${detail.slice(0, 57)}...` : detail}` : toolName;
}
