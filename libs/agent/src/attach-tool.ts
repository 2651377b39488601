import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { type ChannelSandbox, inside } from "@mom/sandbox";
import { formatFileSize, formatSizeOverLimit, guessMimeType } from "@mom/store";
import { stat } from "node:fs/promises";
import { basename, relative, sep } from "node:path";
import Type from "typebox";

/** A file the agent shares, checked and read by the attach tool; the runner delivers it. */
export interface AttachFile {
  bytes: Uint8Array;
  /** The file's own name (last path segment). */
  filename: string;
  /** Workspace-relative path with `/` separators, e.g. `channels/cli/local/scratch/chart.png`. */
  path: string;
  title?: string;
  mimeType?: string;
  size: number;
}

/**
 * How the attach tool reaches the outside. ChannelAgent tools are created once per channel, so
 * `send` must deliver into whichever run is current: the runner routes it to that run's
 * publisher (Object Store put + an `attachment` outbound event with the run's replyTo).
 */
export interface AttachOptions {
  /** config `attachments.maxBytes`: larger files are refused. */
  maxBytes: number;
  /** `signal`: the call's; once it aborts (stop, timeout), the file must not be announced in the run. */
  send(file: AttachFile, signal?: AbortSignal): Promise<void>;
}

/**
 * Reads a file the agent shares (attach, send) through the channel's confined file access, so
 * only what the channel itself can see goes out (not another channel's files, not the data dir,
 * never through a symlink out), and only files inside the workspace. Refused (an error the model
 * sees) when the file is missing, a directory or another non-file, or larger than `maxBytes`.
 */
export async function readShareableFile(
  o: { sandbox: ChannelSandbox; workspaceDir: string; maxBytes: number; verb: "attach" | "send" },
  requestedPath: string,
  requestedTitle?: string,
): Promise<AttachFile> {
  const requested = requestedPath.trim();
  if (!requested) throw new Error("path is empty");
  const done = o.verb === "attach" ? "attached" : "sent";
  const { files } = o.sandbox;
  const real = await files.resolveVisible(requested);
  const workspace = await files.resolveVisible(o.workspaceDir);
  const rel = relative(workspace, real);
  if (real === workspace || !inside(workspace, real)) throw new Error(`${requested}: refused, only files inside the workspace (${o.workspaceDir}) can be ${done}`);
  const st = await stat(real);
  if (st.isDirectory()) throw new Error(`${requested}: is a directory; ${o.verb} one file (e.g. zip the directory first)`);
  const { maxBytes } = o;
  if (st.isFile() && st.size > maxBytes) throw new Error(`${requested}: too large to ${o.verb} (${formatSizeOverLimit(st.size, maxBytes)})`);
  const bytes = await files.readFile(real, maxBytes).catch((err: Error) => {
    throw new Error(/too large/.test(err.message) ? `${requested}: too large to ${o.verb} (more than the ${formatFileSize(maxBytes)} limit)` : err.message.replace(real, requested));
  });
  const filename = basename(real);
  const mimeType = guessMimeType(filename);
  const title = requestedTitle?.trim() || undefined;
  return { bytes: new Uint8Array(bytes), filename, path: rel.split(sep).join("/"), size: bytes.length, ...(title && { title }), ...(mimeType && { mimeType }) };
}

const parameters = Type.Object({
  path: Type.String({ description: "The file to share: relative to your working directory (this channel's directory) or absolute; must be inside the workspace" }),
  title: Type.Optional(Type.String({ description: "Caption shown with the file (default: the file name)" })),
});

/**
 * The `attach` tool: shares a file from the workspace with the channel. Paths go through the
 * channel's confined file access, so only what the channel itself can see is sent (not another
 * channel's files, not the data dir, never through a symlink out), and only files inside the
 * workspace. Refused (a tool error the model sees) too when the file is missing, a directory or
 * another non-file, or larger than `attach.maxBytes`; and when the runner gave no way to send files.
 */
export function createAttachTool(o: { sandbox: ChannelSandbox; workspaceDir: string; attach?: AttachOptions }): ToolDefinition<typeof parameters> {
  return {
    name: "attach",
    label: "attach",
    description:
      "Share a file with the people in this channel (a report, a chart, a generated file). The file is uploaded to the chat. " +
      "Only files inside the workspace can be shared.",
    promptSnippet: "attach: share a workspace file with the channel",
    parameters,
    async execute(_toolCallId, params, signal) {
      if (!o.attach) throw new Error("attaching files is not available in this runner");
      const file = await readShareableFile({ sandbox: o.sandbox, workspaceDir: o.workspaceDir, maxBytes: o.attach.maxBytes, verb: "attach" }, params.path, params.title);
      await o.attach.send(file, signal);
      const { filename, bytes, path } = file;
      return {
        content: [{ type: "text", text: `Attached ${filename} (${formatFileSize(bytes.length)}); it is posted in the channel.` }],
        details: { path, size: bytes.length },
      };
    },
  };
}
