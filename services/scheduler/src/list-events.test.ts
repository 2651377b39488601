import { describe, expect, it } from "@jest/globals";
import { loadConfig } from "@mom/config";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatEventListing, listEvents } from "./list-events.js";

describe("mom events listing", () => {
  it("lists scheduled events with their next fire time, and invalid and missed ones with the reason", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "mom-events-"));
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ scheduler: { graceMinutes: 30 } }));
    const loaded = loadConfig(dataDir, {});
    const ws = loaded.paths.workspaceDir;
    const ev = join(ws, "events");
    mkdirSync(join(ws, "channels", "cli", "local"), { recursive: true });
    mkdirSync(join(ev, "invalid"), { recursive: true });
    mkdirSync(join(ev, "missed"), { recursive: true });
    const put = (name: string, o: unknown) => writeFileSync(join(ev, name), typeof o === "string" ? o : JSON.stringify(o));
    const ch = { channelId: "cli/local", text: "t" };
    put("standup.json", { type: "periodic", ...ch, schedule: "0 9 * * 1-5", timezone: "Europe/Vienna" });
    put("review.json", { type: "one-shot", ...ch, at: "2026-01-05T12:00:00+01:00" });
    put("late.json", { type: "one-shot", ...ch, at: "2026-01-05T08:50:00+01:00" });
    put("gone.json", { type: "one-shot", ...ch, at: "2026-01-05T06:00:00+01:00" });
    put("now.json", { type: "immediate", ...ch });
    put("broken.json", "{");
    put("bad\nname.json", { type: "immediate", ...ch });
    put("invalid/cron.json", "{}");
    put("invalid/cron.json.error", 'bad cron "0 9 * *": exactly five…\n\nThe scheduler moved this file here…\n');
    put("missed/call.json", "{}");
    put("missed/call.json.error", "missed: it was due at 2026-01-01T09:00:00Z, 3 h before the scheduler saw it\n");
    const l = listEvents(loaded, Date.parse("2026-01-05T08:00:00Z"));
    expect(l.scheduled).toEqual([
      { file: "now.json", type: "immediate", channel: "cli/local", when: "immediate", status: "now (as soon as a scheduler sees it)" },
      { file: "gone.json", type: "one-shot", channel: "cli/local", when: "2026-01-05T06:00:00+01:00", next: "2026-01-05T05:00:00.000Z", status: "overdue by 3 h, beyond the grace period: will be moved to missed/" },
      { file: "late.json", type: "one-shot", channel: "cli/local", when: "2026-01-05T08:50:00+01:00", next: "2026-01-05T07:50:00.000Z", status: "overdue by 10 minutes: fires at once, marked late" },
      { file: "standup.json", type: "periodic", channel: "cli/local", when: "0 9 * * 1-5 (Europe/Vienna)", next: "2026-01-06T08:00:00.000Z", status: "in 24 h" },
      { file: "review.json", type: "one-shot", channel: "cli/local", when: "2026-01-05T12:00:00+01:00", next: "2026-01-05T11:00:00.000Z", status: "in 3 h" },
    ].sort((a, b) => (a.next ?? "").localeCompare(b.next ?? "")));
    expect(l.pending).toEqual([
      { file: "bad\nname.json", reason: 'the file name "bad\\nname.json" has control characters (a newline, a tab…); name event files with printable characters' },
      { file: "broken.json", reason: expect.stringMatching(/^invalid JSON/) },
    ]);
    expect(l.invalid).toEqual([{ file: "cron.json", reason: 'bad cron "0 9 * *": exactly five…' }]);
    expect(l.missed).toEqual([{ file: "call.json", reason: "it was due at 2026-01-01T09:00:00Z, 3 h before the scheduler saw it" }]);
    const text = formatEventListing(l);
    expect(text).toContain("scheduled: 5");
    expect(text).toMatch(/standup\.json\s+periodic\s+cli\/local\s+0 9 \* \* 1-5 \(Europe\/Vienna\)\s+next 2026-01-06T08:00:00.000Z\s+in 24 h/);
    expect(text).toMatch(/invalid \(events\/invalid\/\): 1\n\s+cron\.json\s+bad cron/);
    expect(text).toMatch(/missed \(events\/missed\/\): 1\n\s+call\.json\s+it was due/);
    expect(text).toMatch(/not valid, still in events\/.*: 2\n\s+bad\\x0aname\.json\s+the file name "bad\\nname\.json" has control characters.*\n\s+broken\.json\s+invalid JSON/);
  });
});
