import { parseQualifiedChannelId } from "@mom/contracts";
import { WorkspaceLayout } from "@mom/store";
import { createHostToolApi, type MomTool, prepareToolArgs } from "@mom/tools";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import reminders from "../index.js";

const made: string[] = [];
/** Removes every fixture's data dir (afterAll). */
export const cleanup = () => made.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));

export interface Fixture {
  dataDir: string;
  workspaceDir: string;
  tools: Map<string, MomTool>;
  /** A channel's directory (made): the tools' ctx.cwd. */
  channelDir(channel?: string): string;
  /** A channel's events/ directory (not made). */
  eventsDir(channel?: string): string;
  /** The event files (*.json) in a channel's events/; [] when it has none. */
  eventFiles(channel?: string): string[];
  /** Calls a tool as invoke_tool does: arguments checked against its schema first. */
  call(id: string, args?: object, channel?: string): Promise<{ text: string; details: Record<string, unknown> }>;
}

/** A data dir with a workspace and the channels cli/local and cli/other, and the integration's tools. */
export function fixture(opts: { config?: object; settings?: Record<string, unknown> } = {}): Fixture {
  const dataDir = mkdtempSync(join(tmpdir(), "mom-reminders-"));
  made.push(dataDir);
  if (opts.config) writeFileSync(join(dataDir, "config.json"), JSON.stringify(opts.config));
  const workspaceDir = join(dataDir, "workspace");
  const layout = new WorkspaceLayout(workspaceDir);
  const api = createHostToolApi({ dataDir, workspaceDir, ...(opts.settings && { settings: opts.settings }) });
  const tools = new Map(reminders(api).map((t) => [t.id, t]));
  const channelDir = (channel = "cli/local") => {
    const dir = layout.channelDir(parseQualifiedChannelId(channel));
    mkdirSync(dir, { recursive: true });
    return dir;
  };
  channelDir("cli/local");
  channelDir("cli/other");
  const eventsDir = (channel = "cli/local") => join(channelDir(channel), "events");
  return {
    dataDir,
    workspaceDir,
    tools,
    channelDir,
    eventsDir,
    eventFiles: (channel) => {
      try {
        return readdirSync(eventsDir(channel)).filter((f) => f.endsWith(".json")).sort();
      } catch {
        return [];
      }
    },
    async call(id, args = {}, channel = "cli/local") {
      const tool = tools.get(id)!;
      const out = await tool.execute(prepareToolArgs(tool, args), { signal: new AbortController().signal, channel, cwd: channelDir(channel) });
      return typeof out === "string" ? { text: out, details: {} } : { text: out.text, details: (out.details ?? {}) as Record<string, unknown> };
    },
  };
}

/** A local date-time `days` from now at `hh:mm` in `zone`, as "YYYY-MM-DDTHH:MM". */
export function localDay(days: number, hhmm: string, zone: string): string {
  const d = new Date(Date.now() + days * 86_400_000);
  const ymd = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" }).format(d);
  return `${ymd}T${hhmm}`;
}
