import { describe, expect, it } from "@jest/globals";
import type { MessageEvent } from "irc-framework";
import { type IrcView, parseDecision, senderId, toPlatformMessage } from "../../examples/ingress-irc/src/irc-inbound.js";

// examples/ingress-irc's conversion of IRC lines, for what ngircd cannot show end to end: ngircd
// has no services, so no IRCv3 account-tag (identity "account") and no msgid.
const view = (identity: IrcView["identity"] = "nick"): IrcView => ({ nick: "Mom", identity, lower: (t) => t.toLowerCase() });
const line = (over: Partial<MessageEvent>): MessageEvent => ({ nick: "Ana", ident: "ana", hostname: "h", target: "#Team", message: "hello", tags: {}, ...over });

describe("examples/ingress-irc: IRC lines into messages", () => {
  it("who is addressed: `nick:` / `nick,` at the start (rewritten to @nick), the nick as a word, or a private message", () => {
    const m = (message: string, target = "#Team") => toPlatformMessage(line({ message, target }), "1", view());
    expect(m("mom: why?")).toMatchObject({ text: "@Mom why?", rawText: "mom: why?", isMention: true, channelId: "#team" });
    expect(m("MOM, why?")).toMatchObject({ text: "@Mom why?", isMention: true });
    expect(m("ask mom about it")).toMatchObject({ text: "ask mom about it", isMention: true });
    expect(m("momentum is all")).toMatchObject({ isMention: false });
    expect(m("mommy: no")).toMatchObject({ text: "mommy: no", isMention: false });
    expect(m("just us", "Mom")).toMatchObject({ channelId: "ana", isDirect: true, isMention: true });
    expect(m("just us", "Mom").rawText).toBeUndefined();
  });

  it("identity: the nick in lower case, or the services account, and `~nick` for someone not logged in", () => {
    expect(senderId(line({ account: "ana-acct" }), view())).toBe("ana");
    expect(senderId(line({ account: "Ana-Acct" }), view("account"))).toBe("ana-acct");
    expect(senderId(line({}), view("account"))).toBe("~ana");
    expect(toPlatformMessage(line({ tags: { bot: "" } }), "1", view()).sender).toEqual({ id: "ana", username: "Ana", isBot: true });
  });

  it("server time when the server sends it; `!approve` / `!deny` with a code", () => {
    expect(toPlatformMessage(line({ time: Date.UTC(2025, 0, 2, 3, 4, 5) }), "1", view()).timestamp).toBe("2025-01-02T03:04:05.000Z");
    expect(parseDecision(" !approve 48213907 ")).toEqual({ decision: "allow-once", code: "48213907" });
    expect(parseDecision("!DENY 48213907")).toEqual({ decision: "deny", code: "48213907" });
    expect(parseDecision("!approve")).toBeUndefined();
    expect(parseDecision("approve 48213907")).toBeUndefined();
    expect(parseDecision("please !approve 48213907")).toBeUndefined();
  });
});
