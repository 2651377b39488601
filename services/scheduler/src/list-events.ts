import type { LoadedConfig } from "@mom/config";
import { qualifiedChannelId } from "@mom/contracts";
import type { ChannelRef } from "@mom/contracts";
import { WorkspaceLayout } from "@mom/store";
import { closeSync, constants, fstatSync, lstatSync, opendirSync, openSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { type EventFileContext, formatDuration, isEventFileName, MAX_EVENT_FILE_BYTES, nextFireTime, parseEventFile, printableFileName } from "@mom/events";

export interface ListedEvent {
  file: string;
  type: string;
  channel: string;
  /** cron + time zone, `at`, or "immediate". */
  when: string;
  /** ISO time of the next firing, when there is one. */
  next?: string;
  /** What happens to it, in words ("in 3 h", "overdue: fires at once, marked late"…). */
  status: string;
}

export interface ListedProblem {
  file: string;
  reason: string;
}

export interface EventListing {
  eventsDir: string;
  now: string;
  scheduled: ListedEvent[];
  /** Files in an events/ that a running scheduler will move to invalid/. */
  pending: ListedProblem[];
  invalid: ListedProblem[];
  missed: ListedProblem[];
  /** Directories that hold more files than a listing reads (LISTED_PER_DIR), workspace-relative. */
  unlisted: string[];
}

/**
 * At most this many files are read of each directory: a channel's commands can fill its events/
 * (and so invalid/) with millions, and `mom events` must still answer.
 */
export const LISTED_PER_DIR = 500;

/** An events directory: the operator's (`prefix` "") or a channel's own (`prefix` its workspace path). */
interface ListedDir {
  dir: string;
  prefix: string;
  owner?: ChannelRef;
}

/**
 * `mom events`: what the operator's events/ and every channel's own events/ hold, read from the
 * files alone (no NATS, no running scheduler needed). A channel's files are shown by their path in
 * the workspace (`channels/<adapter>/<channel>/events/<file>`).
 */
export function listEvents(loaded: LoadedConfig, nowMs = Date.now()): EventListing {
  const layout = new WorkspaceLayout(loaded.paths.workspaceDir);
  const context = { adapters: new Set(Object.keys(loaded.config.adapters)) };
  const graceMs = loaded.config.scheduler.graceMinutes * 60_000;
  const listing: EventListing = { eventsDir: layout.eventsDir, now: new Date(nowMs).toISOString(), scheduled: [], pending: [], invalid: [], missed: [], unlisted: [] };
  const dirs: ListedDir[] = [{ dir: layout.eventsDir, prefix: "" }];
  for (const owner of layout.listChannels()) {
    const dir = join(layout.channelDir(owner), "events");
    if (isRealDir(dir)) dirs.push({ dir, prefix: `${relative(layout.workspaceDir, dir)}/`, owner });
  }
  for (const d of dirs) listDir(d, listing, context, graceMs, nowMs);
  listing.scheduled.sort((a, b) => (a.next ?? "").localeCompare(b.next ?? "") || a.file.localeCompare(b.file));
  return listing;
}

function listDir({ dir, prefix, owner }: ListedDir, listing: EventListing, context: EventFileContext, graceMs: number, nowMs: number): void {
  const shown = (sub: string, { names, more }: { names: string[]; more: boolean }) => {
    if (more) listing.unlisted.push(`${prefix || "events/"}${sub}`);
    return names;
  };
  for (const name of shown("", files(dir, isEventFileName))) {
    const text = readSmall(join(dir, name));
    if (text === undefined) continue;
    const file = `${prefix}${name}`;
    const parsed = parseEventFile(name, text, context, owner);
    if (!parsed.ok) {
      listing.pending.push({ file, reason: parsed.reason });
      continue;
    }
    const e = parsed.event;
    const channel = qualifiedChannelId(e.ref);
    if (e.type === "immediate") {
      listing.scheduled.push({ file, type: e.type, channel, when: "immediate", status: "now (as soon as a scheduler sees it)" });
    } else if (e.type === "one-shot") {
      const overdue = nowMs - e.atMs;
      const status =
        overdue <= 0
          ? `in ${formatDuration(-overdue)}`
          : overdue <= graceMs
            ? `overdue by ${formatDuration(overdue)}: fires at once, marked late`
            : `overdue by ${formatDuration(overdue)}, beyond the grace period: will be moved to missed/`;
      listing.scheduled.push({ file, type: e.type, channel, when: e.at, next: new Date(e.atMs).toISOString(), status });
    } else {
      const nextMs = nextFireTime(e, nowMs);
      const next = nextMs === undefined ? undefined : new Date(nextMs);
      listing.scheduled.push({
        file,
        type: e.type,
        channel,
        when: `${e.schedule} (${e.timezone})`,
        ...(next && { next: next.toISOString() }),
        status: next ? `in ${formatDuration(next.getTime() - nowMs)}` : "never again",
      });
    }
  }
  for (const kind of ["invalid", "missed"] as const) {
    const asideDir = join(dir, kind);
    if (!isRealDir(asideDir)) continue;
    for (const name of shown(`${kind}/`, files(asideDir, (f) => f.endsWith(".json")))) {
      const note = readSmall(join(asideDir, `${name}.error`));
      const reason = note?.split("\n")[0]!.replace(/^missed: /, "") || "(no .error note)";
      listing[kind].push({ file: `${prefix}${name}`, reason });
    }
  }
}

/** A directory, not a symlink to one (a channel's events/ is its commands' to change). */
function isRealDir(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** A regular file's text, read without following a symlink or waiting on a FIFO; undefined otherwise. */
function readSmall(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > MAX_EVENT_FILE_BYTES) return undefined;
    return readFileSync(fd, "utf8");
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** The listing as text for a terminal. */
export function formatEventListing(l: EventListing): string {
  const out: string[] = [`Events in ${l.eventsDir} and the channels' own events/ directories (now ${l.now})`, ""];
  const table = (rows: string[][]) => {
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
    return rows.map((r) => `  ${r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")}`.trimEnd());
  };
  out.push(`scheduled: ${l.scheduled.length}`);
  if (l.scheduled.length) out.push(...table(l.scheduled.map((e) => [e.file, e.type, e.channel, e.when, e.next ? `next ${e.next}` : "", e.status])));
  const section = (title: string, rows: ListedProblem[]) => {
    if (!rows.length) return;
    out.push("", `${title}: ${rows.length}`, ...table(rows.map((p) => [printableFileName(p.file), p.reason])));
  };
  section("not valid, still in events/ (a running scheduler moves them to events/invalid/)", l.pending);
  section("invalid (events/invalid/)", l.invalid);
  section("missed (events/missed/)", l.missed);
  if (l.unlisted.length) out.push("", `not all shown: more than ${LISTED_PER_DIR} files in ${l.unlisted.join(", ")}`);
  return out.join("\n");
}

/** The first LISTED_PER_DIR files of `dir` that `wanted` picks (sorted), read a few at a time; `more` when there are others. */
function files(dir: string, wanted: (name: string) => boolean): { names: string[]; more: boolean } {
  const names: string[] = [];
  let more = false;
  let handle;
  try {
    handle = opendirSync(dir);
    for (let d = handle.readSync(); d && !more; d = handle.readSync()) {
      if (!d.isFile() || !wanted(d.name)) continue;
      if (names.length < LISTED_PER_DIR) names.push(d.name);
      else more = true;
    }
  } catch {
    // gone or unreadable: nothing listed
  } finally {
    handle?.closeSync();
  }
  return { names: names.sort(), more };
}
