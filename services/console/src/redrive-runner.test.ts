import { describe, expect, it } from "@jest/globals";
import { RedriveRefused, redriveWindow } from "@mom/agent-runner";
import type { BusEntry } from "@mom/bus";
import type { LoadedConfig } from "@mom/config";
import { parseRedriveWindow, RedriveError } from "./redrive-runner.js";

const NOW = Date.parse("2026-03-02T12:00:00Z");

describe("parseRedriveWindow", () => {
  it("takes a duration back from now or a count of messages", () => {
    expect(parseRedriveWindow("1h", NOW)).toEqual({ since: new Date(NOW - 3600_000) });
    expect(parseRedriveWindow(" 1d ", NOW)).toEqual({ since: new Date(NOW - 86_400_000) });
    expect(parseRedriveWindow("20", NOW)).toEqual({ last: 20 });
  });

  it("says what it expected when given anything else", () => {
    for (const bad of ["", "yesterday", "1 fortnight", "-1h", "0"]) {
      expect(() => parseRedriveWindow(bad, NOW)).toThrow(RedriveError);
    }
    expect(() => parseRedriveWindow("soon", NOW)).toThrow('window: expected a duration back from now (30m, 1h, 1d) or a message count (20), got "soon"');
  });
});

describe("redriveWindow's cap", () => {
  it("refuses a window with more triggering messages than the cap before any model or workspace is touched", async () => {
    const entries = Array.from({ length: 3 }, (_, i) => ({
      kind: "in",
      stream: "MOM_IN",
      seq: i + 1,
      time: "2026-03-02T11:00:00Z",
      subject: "x",
      channel: "cli/local",
      data: { id: `m${i}`, timestamp: "2026-03-02T11:00:00Z", sender: { id: "u1", username: "ann" }, text: "hi", isMention: true, attachments: [] },
    })) as unknown as BusEntry[];
    // No config or paths: the cap is checked before either is read.
    const loaded = {} as LoadedConfig;
    const run = redriveWindow({ loaded, ref: { adapter: "cli", channelId: "local" }, entries, maxTriggers: 2 });
    await expect(run).rejects.toThrow(RedriveRefused);
    await expect(redriveWindow({ loaded, ref: { adapter: "cli", channelId: "local" }, entries, maxTriggers: 2 })).rejects.toThrow("the window holds 3 messages that asked mom something; a redrive takes at most 2: pick a shorter window");
  });
});
