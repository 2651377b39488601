import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { ChannelSandbox } from "@mom/sandbox";
import { formatFileSize } from "@mom/store";
import { applyPatch, parsePatch, type StructuredPatch } from "diff";
import { dirname, isAbsolute, resolve } from "node:path";
import Type from "typebox";

const parameters = Type.Object({
  patch: Type.String({
    description: "A unified diff of one or more files (`--- a/path` / `+++ b/path` / `@@ … @@` hunks, as `diff -u` or `git diff` writes it). Paths are relative to your working directory. `--- /dev/null` creates a file.",
  }),
});

const NO_FILE = "/dev/null";

/**
 * Most line comparisons one call may make to fit its hunks. The diff library looks for a hunk at
 * every line of the file, comparing its lines at each, synchronously on the runner's event loop:
 * a 3 KB hunk of 1,000 equal lines that does not fit a 16 MB file of such lines is 8 billion
 * comparisons, minutes during which no channel is served. A hunk at its place (or moved a few
 * thousand lines) takes a few thousand.
 */
export const MAX_LINE_COMPARISONS = 10_000_000;

/** A diff's file name as a path: git's `a/` and `b/` prefixes and a timestamp after a tab go. */
function pathOf(name: string | undefined, gitPrefixed: boolean): string | undefined {
  if (!name) return undefined;
  const bare = name.split("\t")[0]!.trim();
  if (bare === NO_FILE) return NO_FILE;
  return gitPrefixed ? bare.replace(/^[ab]\//, "") : bare;
}

function hunkHeader(h: StructuredPatch["hunks"][number]): string {
  return `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`;
}

type Fit = (old: string, p: StructuredPatch) => string | false;

/** applyPatch, all calls together held to MAX_LINE_COMPARISONS; past it, throws naming `shown` of the current file. */
function boundedFit(): { fit: Fit; file(shown: string): void } {
  let left = MAX_LINE_COMPARISONS;
  let shown = "";
  const compareLine = (_n: number, line: string | undefined, _op: string, content: string) => {
    if (--left < 0) {
      throw new Error(
        `${shown}: fitting the patch's hunks took more than ${MAX_LINE_COMPARISONS.toLocaleString("en-US")} line comparisons (a long hunk of repeated lines in a long file?), so it was given up. Make hunks with fewer, more distinctive context lines, or change the file with bash. Nothing was changed.`,
      );
    }
    return line === content;
  };
  return { fit: (old, p) => applyPatch(old, p, { compareLine }), file: (s) => (shown = s) };
}

/** Why a patch does not apply to `old`: the first hunk that does not fit, with where it expected what. */
function failingHunk(old: string, p: StructuredPatch, fit: Fit): string {
  for (let i = 0; i < p.hunks.length; i++) {
    if (fit(old, { ...p, hunks: p.hunks.slice(0, i + 1) }) === false) {
      const h = p.hunks[i]!;
      const expected = h.lines.find((l) => l.startsWith(" ") || l.startsWith("-"))?.slice(1);
      return `hunk ${i + 1} of ${p.hunks.length} (${hunkHeader(h)}) does not apply${expected !== undefined ? `: the file has no ${JSON.stringify(expected.slice(0, 80))} near line ${h.oldStart}` : ""}`;
    }
  }
  return "it does not apply";
}

interface Change {
  path: string;
  before?: Buffer;
  after: string;
  added: number;
  removed: number;
}

/**
 * `apply_patch`: a unified diff of one or more files applied all at once inside the channel's
 * view, or not at all. Every file is read and every hunk fitted first; a hunk that does not fit
 * (the file changed since the model read it) fails the call naming the file and the hunk, and
 * nothing is written. Writes go through the channel's confined file access, as `write` and `edit`
 * do; if one fails midway, the files written before it get their old content back.
 */
export function createApplyPatchTool(sandbox: ChannelSandbox): ToolDefinition<typeof parameters> {
  const cwd = sandbox.executor.view.channelDir;
  const { files } = sandbox;
  return {
    name: "apply_patch",
    label: "apply_patch",
    description:
      "Apply a unified diff (one or several files) in one step: all hunks or none. Use it for changes across files or several places of a file; " +
      "a hunk that does not match the file fails the call and changes nothing (read the file again and make a new patch). Deleting or renaming files: use bash.",
    promptSnippet: "apply_patch: apply a unified diff to one or more files, all or nothing",
    parameters,
    async execute(_toolCallId, { patch }) {
      let parsed: StructuredPatch[];
      try {
        parsed = parsePatch(patch);
      } catch (err) {
        throw new Error(`the patch cannot be read: ${(err as Error).message}`);
      }
      parsed = parsed.filter((p) => p.hunks.length > 0);
      if (parsed.length === 0) throw new Error("the patch has no hunks (expected `--- a/file`, `+++ b/file` and `@@ … @@` lines)");
      const changes: Change[] = [];
      const { fit, file } = boundedFit();
      // Every file stays held (bytes, text, patched text) until all are written, so the files of
      // one patch together get what one read may return: each alone may be that large, and a
      // short patch can name hundreds of them (sparse files cost the channel no disk), which held
      // at once would be gigabytes, more than the runner's heap.
      let left = sandbox.executor.maxOutputBytes;
      const readWithin = async (path: string, shown: string): Promise<Buffer> => {
        const bytes = await files.readFile(path, left).catch((err: Error) => {
          if (left < sandbox.executor.maxOutputBytes && /too large to read whole|grew past/.test(err.message)) {
            throw new Error(`${shown}: the files of this patch are more than ${formatFileSize(sandbox.executor.maxOutputBytes)} in all, the most one call reads; split it into smaller patches. Nothing was changed.`);
          }
          throw err;
        });
        left -= bytes.length;
        return bytes;
      };
      for (const p of parsed) {
        // git writes a/ and b/ in front of the paths (and /dev/null for a side that does not exist).
        const side = (name: string | undefined, prefix: string) => !!name && (name.startsWith(prefix) || name.startsWith(NO_FILE));
        const git = side(p.oldFileName, "a/") && side(p.newFileName, "b/") && !(p.oldFileName?.startsWith(NO_FILE) && p.newFileName?.startsWith(NO_FILE));
        const from = pathOf(p.oldFileName, git);
        const to = pathOf(p.newFileName, git);
        if (!to || to === NO_FILE) throw new Error(`${from ?? "a file"}: deleting files is not what apply_patch does; use bash (rm)`);
        if (from && from !== NO_FILE && from !== to) throw new Error(`${from} → ${to}: renaming files is not what apply_patch does; use bash (mv), then patch`);
        const path = isAbsolute(to) ? to : resolve(cwd, to);
        if (changes.some((c) => c.path === path)) throw new Error(`${to}: the patch changes it twice; make one diff per file`);
        const before = from === NO_FILE ? undefined : await readWithin(path, to);
        const old = before?.toString("utf8") ?? "";
        file(to);
        const after = fit(old, p);
        if (after === false) throw new Error(`${to}: ${failingHunk(old, p, fit)}. Nothing was changed.`);
        const lines = p.hunks.flatMap((h) => h.lines);
        changes.push({ path, ...(before && { before }), after, added: lines.filter((l) => l.startsWith("+")).length, removed: lines.filter((l) => l.startsWith("-")).length });
      }
      const written: Change[] = [];
      try {
        for (const c of changes) {
          if (!c.before) await files.mkdir(dirname(c.path));
          await files.writeFile(c.path, c.after);
          written.push(c);
        }
      } catch (err) {
        // A file the patch created is left empty: the confined file access has no delete.
        for (const c of written.reverse()) await files.writeFile(c.path, c.before ?? "").catch(() => {});
        throw new Error(`${(err as Error).message}. Nothing was changed (the files written before it have their old content again).`);
      }
      const summary = changes.map((c) => `${c.path.startsWith(`${cwd}/`) ? c.path.slice(cwd.length + 1) : c.path} (+${c.added} −${c.removed}${c.before ? "" : ", new"})`);
      return { content: [{ type: "text", text: `Applied ${parsed.reduce((n, p) => n + p.hunks.length, 0)} hunks to ${changes.length} file${changes.length === 1 ? "" : "s"}: ${summary.join(", ")}` }], details: undefined };
    },
  };
}
