// files.archive.create — packs a directory of the workspace into a .tar.gz archive.
// Install: copy this directory to data/workspace/tools/archive/ (see ../README.md).
import { mkdir, realpath, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import Type from "typebox";
import type { CustomToolApi, MomTool } from "@mom/tools";

const Params = Type.Object({
  dir: Type.String({ description: "Directory to pack, relative to the channel directory (must be inside the workspace)" }),
  out: Type.Optional(
    Type.String({ description: "Archive to create, relative to the channel directory; default <dir>-<timestamp>.tar.gz next to the directory" }),
  ),
  exclude: Type.Optional(Type.Array(Type.String(), { description: "tar --exclude patterns to leave out, e.g. node_modules or *.log" })),
  overwrite: Type.Boolean({ default: false, description: "Replace the archive if it already exists" }),
});

/** Single-quotes a string for bash. */
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

const inside = (root: string, p: string) => {
  const r = relative(root, p);
  return r === "" || (!r.startsWith("..") && !isAbsolute(r));
};

const stamp = () => new Date().toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export default function archiveTool(api: CustomToolApi): MomTool<typeof Params> {
  return {
    id: "files.archive.create",
    risk: "write",
    description:
      "Pack a directory of the workspace into a gzip-compressed tar archive (.tar.gz), e.g. to attach a folder of results or keep a snapshot before a big change. Does not modify the directory.",
    parameters: Params,
    timeoutMs: 5 * 60_000,
    async execute(args, ctx) {
      const workspace = await realpath(api.workspaceDir);
      const cwd = await realpath(ctx.cwd);
      const src = await realpath(resolve(cwd, args.dir)).catch(() => {
        throw new Error(`${args.dir} does not exist`);
      });
      if (!inside(workspace, src)) throw new Error(`${args.dir} is outside the workspace`);
      if (!(await stat(src)).isDirectory()) throw new Error(`${args.dir} is not a directory`);

      const out = resolve(cwd, args.out ?? join(dirname(src), `${basename(src)}-${stamp()}.tar.gz`));
      if (!inside(workspace, out)) throw new Error(`the archive ${out} would be outside the workspace; pass out`);
      await mkdir(dirname(out), { recursive: true });
      const outDir = await realpath(dirname(out));
      if (!inside(workspace, outDir)) throw new Error(`the archive ${out} would be outside the workspace`);
      if (inside(src, join(outDir, basename(out)))) throw new Error("the archive cannot be inside the directory it packs");
      const exists = await stat(out).then(() => true, () => false);
      if (exists && !args.overwrite) throw new Error(`${relative(cwd, out)} already exists; pass overwrite: true to replace it`);

      const partial = `${out}.partial`;
      const excludes = (args.exclude ?? []).map((p) => `--exclude=${q(p)}`).join(" ");
      const pack = await api.exec(`tar -czf ${q(partial)} ${excludes} -C ${q(dirname(src))} ${q(basename(src))}`, {
        signal: ctx.signal,
        timeoutMs: 5 * 60_000,
      });
      if (pack.exitCode !== 0) {
        await rm(partial, { force: true });
        throw new Error(`tar failed (exit ${pack.exitCode}): ${pack.stderr.trim() || pack.stdout.trim()}`);
      }
      await rename(partial, out);
      const list = await api.exec(`tar -tzf ${q(out)} | wc -l`, { signal: ctx.signal });
      const entries = Number.parseInt(list.stdout.trim(), 10) || 0;
      const bytes = (await stat(out)).size;
      const shown = inside(cwd, out) ? relative(cwd, out) : out;
      return {
        text: `Created ${shown} (${entries} entries, ${formatBytes(bytes)}) from ${relative(cwd, src) || "."}.`,
        details: { path: out, entries, bytes },
      };
    },
  };
}
