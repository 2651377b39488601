import { existsSync } from "node:fs";
import { isAbsolute, join, relative, resolve, sep } from "node:path";

export type MountMode = "ro" | "rw" | "hidden";

/** One entry of what a channel's commands can see; a deeper path overrides the paths above it. */
export interface Mount {
  path: string;
  mode: MountMode;
}

/**
 * The files one channel's tools may touch: the same list builds the bwrap mounts and decides
 * every path the file tools (read, write, edit, attach, scratch files) accept, so the two never
 * disagree. Paths not under any mount are not visible at all.
 */
export interface SandboxView {
  readonly mounts: readonly Mount[];
  /** The channel's directory: the working directory and HOME of its commands. */
  readonly channelDir: string;
}

export interface ViewInput {
  dataDir: string;
  workspaceDir: string;
  channelDir: string;
  /** Workspace-relative paths every channel sees (global memory, skills): read-only, or writable with `sharedWritable`. */
  shared: readonly string[];
  /**
   * This channel may change the shared paths (it is in `sandbox.sharedWriters`). Default false:
   * the shared paths are bound read-only, so no channel can put text into another channel's prompt.
   */
  sharedWritable?: boolean;
  /** Files inside the channel's directory that stay read-only (the runner's own). */
  readOnly?: readonly string[];
}

/** Where the system's programs and libraries live; bound read-only when they exist. */
export const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];
/** Files under the system dirs that hold other secrets of the host (password hashes). */
export const MASKED_FILES = ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-"];

/** The operator's event files (any channel may be their target): hidden from channels unless shared. */
export const OPERATOR_EVENTS_DIR = "events";

/**
 * The view of one channel, in bwrap's order (parents before children): the system read-only,
 * the data dir (config.json, models.json, auth.json) hidden, the workspace read-only, every
 * channel and the operator's events/ hidden, the shared paths read-only (writable for a shared
 * writer), then this channel writable.
 */
export function channelView(input: ViewInput): SandboxView {
  const workspaceDir = resolve(input.workspaceDir);
  const channelDir = resolve(input.channelDir);
  const shared = input.shared.map((p) => resolve(workspaceDir, p)).filter((p) => inside(workspaceDir, p));
  const operatorEvents = join(workspaceDir, OPERATOR_EVENTS_DIR);
  const mounts: Mount[] = [
    ...SYSTEM_DIRS.filter((d) => existsSync(d)).map((path) => ({ path, mode: "ro" as const })),
    ...MASKED_FILES.filter((f) => existsSync(f)).map((path) => ({ path, mode: "hidden" as const })),
    { path: resolve(input.dataDir), mode: "hidden" },
    { path: workspaceDir, mode: "ro" },
    { path: join(workspaceDir, "channels"), mode: "hidden" },
    // Its files name other channels (a private DM's id) and say what runs there.
    ...(shared.includes(operatorEvents) ? [] : [{ path: operatorEvents, mode: "hidden" as const }]),
    ...shared.map((path) => ({ path, mode: input.sharedWritable ? ("rw" as const) : ("ro" as const) })),
    { path: channelDir, mode: "rw" },
    ...(input.readOnly ?? []).map((f) => ({ path: resolve(f), mode: "ro" as const })).filter((m) => inside(channelDir, m.path)),
  ];
  return { mounts, channelDir };
}

/**
 * What one container shared by every channel of the workspace mounts (docker `scope:
 * "workspace"`): like a channel's view, but with every channel's directory writable, the runner's
 * files included, since a container's mounts cannot differ per command. For the same reason the
 * shared paths are read-only there for every channel, shared writers included.
 */
export function sharedContainerView(input: Omit<ViewInput, "channelDir" | "readOnly" | "sharedWritable">): SandboxView {
  const workspaceDir = resolve(input.workspaceDir);
  const channels = join(workspaceDir, "channels");
  const mounts = channelView({ ...input, channelDir: channels, sharedWritable: false }).mounts.filter((m) => !(m.path === channels && m.mode === "hidden"));
  return { mounts, channelDir: channels };
}

export function inside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** What the view allows at `path` (absolute, symlinks already resolved): the deepest mount decides. */
export function modeAt(view: SandboxView, path: string): MountMode {
  let best: Mount | undefined;
  for (const m of view.mounts) {
    if (inside(m.path, path) && (!best || m.path.length >= best.path.length)) best = m;
  }
  return best?.mode ?? "hidden";
}

