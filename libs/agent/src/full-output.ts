import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { ConfinedFiles } from "@mom/sandbox";
import { readFile, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";

type AnyTool = ToolDefinition<any, any, any>;

/**
 * pi's bash tool keeps the last lines of a long output for the model and writes the whole output
 * to a file in the host's temp dir. That file belongs with the channel, where the agent (and a
 * sandbox that hides /tmp) can read it later: it is moved into `scratchDir` and every mention of
 * its old path in the result is rewritten. It is written through the channel's confined file
 * access, so a `scratch` the agent turned into a symlink cannot send it anywhere else. (The file
 * is at most the executor's output cap.) When it cannot be moved there, it is deleted all the same:
 * the host's temp dir is outside every channel's disk limit and out of reach of its commands, so a
 * channel that broke its `scratch` would otherwise leave up to 16 MB there per command, for good.
 */
export function keepFullOutputIn(scratchDir: string, files: ConfinedFiles, tool: AnyTool): AnyTool {
  /** The file's new path, or undefined (and why, in `note`) when it could not be kept. */
  const relocate = async (from: string, toolCallId: string): Promise<{ to?: string; note: string }> => {
    try {
      await files.mkdir(scratchDir);
      const to = join(scratchDir, `${tool.name}-${toolCallId.replace(/[^A-Za-z0-9_-]/g, "_")}-${basename(from)}`);
      await files.writeFile(to, await readFile(from));
      return { to, note: `Full output: ${to}` };
    } catch (err) {
      return { note: `Full output not kept: ${(err as Error).message}` };
    } finally {
      await unlink(from).catch(() => {});
    }
  };
  const FULL_OUTPUT = /Full output: (\S+?)(?=\]|\s|$)/g;
  /**
   * pi's file, named in a failed command's error message, whose text starts with the command's
   * own output: a command can print "Full output: <any path>" itself, and the runner would copy
   * that file (another channel's log, config.json) into this channel's scratch/ and delete it.
   * So only pi's note counts — the last one, after the output — and only a name pi makes
   * (`<temp dir>/pi-bash-<16 random hex>.log`), which a command cannot know.
   */
  const piFile = (message: string): string | undefined => {
    const last = [...message.matchAll(FULL_OUTPUT)].at(-1)?.[1];
    return last && dirname(last) === tmpdir() && /^pi-[a-z]+-[0-9a-f]{16}\.log$/.test(basename(last)) ? last : undefined;
  };
  return {
    ...tool,
    async execute(toolCallId, params, signal, onUpdate, ctx) {
      try {
        const result = await tool.execute(toolCallId, params, signal, onUpdate, ctx);
        const from = (result.details as { fullOutputPath?: string } | undefined)?.fullOutputPath;
        if (!from) return result;
        const { to, note } = await relocate(from, toolCallId);
        const { fullOutputPath: _, ...details } = result.details as { fullOutputPath?: string };
        return {
          ...result,
          details: { ...details, ...(to && { fullOutputPath: to }) },
          content: result.content.map((c) => (c.type === "text" ? { ...c, text: c.text.split(`Full output: ${from}`).join(note) } : c)),
        };
      } catch (err) {
        // Failed commands (non-zero exit) arrive as errors whose message carries the output.
        const message = (err as Error)?.message ?? "";
        const from = piFile(message);
        if (!from) throw err;
        const { note } = await relocate(from, toolCallId);
        throw new Error(message.split(`Full output: ${from}`).join(note));
      }
    },
  };
}
