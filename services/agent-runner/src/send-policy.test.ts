import { describe, expect, it } from "@jest/globals";
import type { MomConfig } from "@mom/config";
import { decideSend, sendTargets } from "./send-policy.js";

const config = (routes: MomConfig["send"]["routes"]): Pick<MomConfig, "adapters" | "send"> => ({
  adapters: { cli: { type: "cli" }, tg: { type: "telegram", botToken: "t" }, slack: { type: "cli" } } as unknown as MomConfig["adapters"],
  send: { routes, timeoutSeconds: 30 },
});
const ana = { id: "1001", username: "ana", isBot: false };
const tg = (channelId: string) => ({ adapter: "tg", channelId });

describe("send policy", () => {
  it("offers nothing without a route: deny by default", () => {
    expect(sendTargets(config([]), tg("-100200"))).toEqual([]);
    expect(decideSend(config([]), tg("-100200"), "tg/-100300", ana)).toEqual({ ok: false, reason: "config.json send.routes allows no post from tg/-100200 to tg/-100300" });
  });

  it("a route from a channel, or from every channel of its adapter, names where it may post", () => {
    const c = config([
      { from: "tg/-100200", to: ["tg/-100300"] },
      { from: "tg/*", to: ["cli/local", "tg/-100300"] },
    ]);
    expect(sendTargets(c, tg("-100200"))).toEqual(["tg/-100300", "cli/local"]);
    expect(sendTargets(c, tg("-100999"))).toEqual(["cli/local", "tg/-100300"]);
    expect(sendTargets(c, { adapter: "cli", channelId: "local" })).toEqual([]);
    expect(decideSend(c, tg("-100200"), "tg/-100300", ana)).toEqual({ ok: true, target: tg("-100300"), access: "check" });
  });

  it("the model's channel is one channel, never a pattern or a path: wildcards, .., other adapters and junk are refused", () => {
    const c = config([{ from: "tg/-100200", to: ["tg/*"] }]);
    const refused = (target: string) => {
      const d = decideSend(c, tg("-100200"), target, ana);
      return d.ok ? "allowed" : d.reason;
    };
    expect(refused("tg/*")).toMatch(/not one channel id/);
    expect(refused("tg/-100*")).toMatch(/not one channel id/);
    expect(refused("tg/..")).toMatch(/not one channel id/);
    expect(refused("tg/.")).toMatch(/not one channel id/);
    expect(refused("tg/-100300 ")).toMatch(/not one channel id/);
    expect(refused("tg/-1003\u202e00")).toMatch(/not one channel id/);
    expect(refused("tg/>")).toMatch(/not one channel id/);
    expect(refused("tg/")).toMatch(/empty or too long/);
    expect(refused(`tg/${"1".repeat(300)}`)).toMatch(/empty or too long/);
    expect(refused("-100300")).toMatch(/is not a channel: write "<adapter>\/<channelId>"/);
    expect(refused("../tg/-100300")).toMatch(/no adapter ".." in this mom/);
    expect(refused("TG/-100300")).toMatch(/no adapter "TG"/);
    expect(refused("whatsapp/123")).toMatch(/no adapter "whatsapp" in this mom \(adapters: cli, tg, slack\)/);
    expect(refused("tg/../cli/local")).toMatch(/not one channel id/);
    expect(refused("tg/-100300/..")).toMatch(/not one channel id/);
    // A slash alone is part of one id of tg (escaped on the bus), not a path elsewhere.
    expect(refused("tg/a/b")).toBe("allowed");
    expect(refused("cli/local")).toBe("config.json send.routes allows no post from tg/-100200 to cli/local");
    expect(refused("tg/-100200")).toBe("tg/-100200 is this channel: answer here instead");
  });

  it("a person must ask, and be checkable: the same platform asks the platform, the terminal is the operator, another platform is refused", () => {
    const c = config([
      { from: "tg/-100200", to: ["tg/-100300", "cli/local", "slack/C1"] },
      { from: "cli/local", to: ["tg/*"] },
    ]);
    expect(decideSend(c, tg("-100200"), "tg/-100300", { id: "scheduler", username: "scheduler", isBot: true })).toEqual({
      ok: false,
      reason: "a person must ask for it: this run was started by scheduler (a bot or a scheduled event), and whether they may see tg/-100300 cannot be checked",
    });
    expect(decideSend(c, tg("-100200"), "slack/C1", ana)).toEqual({
      ok: false,
      reason: "@ana asked on tg; mom cannot check whether they can see slack/C1 on slack, another platform (only the operator's terminal posts across platforms)",
    });
    expect(decideSend(c, { adapter: "cli", channelId: "local" }, "tg/-100300", { id: "u-tester", username: "tester", isBot: false })).toEqual({ ok: true, target: tg("-100300"), access: "operator" });
  });
});
