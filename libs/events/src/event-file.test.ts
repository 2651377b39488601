import { describe, expect, it } from "@jest/globals";
import { type EventFileContext, isEventFileName, parseEventFile } from "./event-file.js";

const ctx: EventFileContext = {
  adapters: new Set(["cli", "slack-acme"]),
};
const parse = (o: unknown) => parseEventFile("e.json", typeof o === "string" ? o : JSON.stringify(o), ctx);
const base = { channelId: "cli/local", text: "hello" };

describe("parseEventFile", () => {
  it("takes any channel of a configured adapter, one mom has never seen included", () => {
    expect(parse({ type: "immediate", channelId: "slack-acme/C-NEVER-SEEN", text: "hello" })).toMatchObject({ ok: true, event: { ref: { adapter: "slack-acme", channelId: "C-NEVER-SEEN" } } });
  });

  it("reads the three types", () => {
    expect(parse({ type: "immediate", ...base })).toMatchObject({ ok: true, event: { type: "immediate", ref: { adapter: "cli", channelId: "local" }, text: "hello" } });
    expect(parse({ type: "one-shot", ...base, at: "2026-12-15T09:00:00+01:00" })).toMatchObject({ ok: true, event: { type: "one-shot", at: "2026-12-15T09:00:00+01:00", atMs: Date.parse("2026-12-15T08:00:00Z") } });
    expect(parse({ type: "periodic", ...base, schedule: " 0 9 * * 1-5 ", timezone: "Europe/Vienna", note: "extra keys are fine" })).toMatchObject({
      ok: true,
      event: { type: "periodic", schedule: "0 9 * * 1-5", timezone: "Europe/Vienna" },
    });
    // channel ids with slashes, dots and other characters are kept (the slack id here is "C1/x.y")
    expect(parse({ type: "immediate", channelId: "slack-acme/C1/x.y", text: "t" })).toMatchObject({ ok: true, event: { ref: { adapter: "slack-acme", channelId: "C1/x.y" } } });
  });

  it("names each problem, and the channel when it is known", () => {
    const cases: Array<[unknown, RegExp, boolean]> = [
      ['{"type": "immediate", "chan', /^invalid JSON: /, false],
      ["[1,2]", /expected a JSON object/, false],
      [{ type: "immediate", text: "x" }, /"channelId" must be "<adapter>\/<channelId>", got nothing/, false],
      [{ type: "immediate", channelId: "general", text: "x" }, /"channelId" must be .* got "general"/, false],
      [{ type: "immediate", channelId: "discord/123", text: "x" }, /unknown adapter "discord" .*adapters in config.json: cli, slack-acme/, false],
      [{ ...base }, /missing "type"/, true],
      [{ ...base, type: "weekly" }, /unknown type "weekly" \(expected "immediate", "one-shot" or "periodic"\)/, true],
      [{ type: "immediate", channelId: "cli/local", text: "  " }, /"text" must be a non-empty string/, true],
      [{ ...base, type: "one-shot" }, /bad date: "at" must be .* got nothing/, true],
      [{ ...base, type: "one-shot", at: "2026-12-15 09:00" }, /bad date: "at" is "2026-12-15 09:00"/, true],
      [{ ...base, type: "one-shot", at: "2026-12-15T09:00:00" }, /bad date/, true],
      [{ ...base, type: "periodic", timezone: "UTC" }, /bad cron: "schedule" must be a cron expression/, true],
      [{ ...base, type: "periodic", schedule: "0 9 * *", timezone: "UTC" }, /bad cron "0 9 \* \*": .*five, six, or seven/, true],
      [{ ...base, type: "periodic", schedule: "0 0 30 2 *", timezone: "UTC" }, /bad cron "0 0 30 2 \*": it never fires/, true],
      [{ ...base, type: "periodic", schedule: "0 9 * * *" }, /unknown time zone: "timezone" must be an IANA name/, true],
      [{ ...base, type: "periodic", schedule: "0 9 * * *", timezone: "Europe/Wien" }, /unknown time zone "Europe\/Wien"/, true],
    ];
    for (const [input, reason, known] of cases) {
      const r = parse(input);
      expect(r.ok).toBe(false);
      if (r.ok) continue;
      expect(r.reason).toMatch(reason);
      expect(r.ref !== undefined).toBe(known);
    }
  });

  it("event files are *.json, not dot files or notes", () => {
    expect(isEventFileName("standup.json")).toBe(true);
    for (const n of [".standup.json.swp", ".tmp.json", "standup.json.error", "notes.txt", ".json"]) expect(isEventFileName(n)).toBe(false);
  });
});
