import type { LoadedConfig } from "@mom/config";
import { qualifiedChannelId } from "@mom/contracts";
import { WorkspaceLayout } from "@mom/store";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { isEventFileName, parseEventFile, printableFileName } from "./event-file.js";
import { EventsDir } from "./events-dir.js";
import { formatDuration } from "./schedule.js";

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
  /** Files in events/ that a running scheduler will move to invalid/. */
  pending: ListedProblem[];
  invalid: ListedProblem[];
  missed: ListedProblem[];
}

/** `mom events`: what events/ holds, read from the files alone (no NATS, no running scheduler needed). */
export function listEvents(loaded: LoadedConfig, nowMs = Date.now()): EventListing {
  const layout = new WorkspaceLayout(loaded.paths.workspaceDir);
  const dir = new EventsDir(layout.eventsDir);
  const context = { adapters: new Set(Object.keys(loaded.config.adapters)) };
  const graceMs = loaded.config.scheduler.graceMinutes * 60_000;
  const listing: EventListing = { eventsDir: layout.eventsDir, now: new Date(nowMs).toISOString(), scheduled: [], pending: [], invalid: [], missed: [] };
  for (const file of files(layout.eventsDir).filter(isEventFileName)) {
    let text: string;
    try {
      text = readFileSync(join(layout.eventsDir, file), "utf8");
    } catch {
      continue;
    }
    const parsed = parseEventFile(file, text, context);
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
      const next = e.cron.nextAfter(new Date(nowMs));
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
  listing.scheduled.sort((a, b) => (a.next ?? "").localeCompare(b.next ?? "") || a.file.localeCompare(b.file));
  for (const kind of ["invalid", "missed"] as const) {
    const asideDir = dir.asideDir(kind);
    for (const file of files(asideDir).filter((f) => f.endsWith(".json"))) {
      let reason = "(no .error note)";
      try {
        reason = readFileSync(join(asideDir, `${file}.error`), "utf8").split("\n")[0]!.replace(/^missed: /, "") || reason;
      } catch {
        // keep the placeholder
      }
      listing[kind].push({ file, reason });
    }
  }
  return listing;
}

/** The listing as text for a terminal. */
export function formatEventListing(l: EventListing): string {
  const out: string[] = [`Events in ${l.eventsDir} (now ${l.now})`, ""];
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
  return out.join("\n");
}

function files(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => d.name)
      .sort();
  } catch {
    return [];
  }
}
