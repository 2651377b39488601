import { describe, expect, it } from "@jest/globals";
import { compareTs, isConversationMessage, toChannelMessage, tsToIso } from "./slack-inbound.js";
import { isStopCommand as isStopText } from "@mom/ingress-sdk";

const alice = { id: "U0ALICE", username: "alice", displayName: "Alice", isBot: false };
const names = { user: (id: string) => (id === "U0ALICE" ? "alice" : id === "UBOT" ? "mom" : undefined) };

describe("toChannelMessage", () => {
  it("a channel mention: id = ts, text with @names, rawText as sent, no replyTo at top level", () => {
    const m = toChannelMessage({ channel: "C1", ts: "1732184400.000100", user: "U0ALICE", text: "<@UBOT> hi &amp; bye" }, { botUserId: "UBOT", sender: alice, names, isDirect: false });
    expect(m).toEqual({
      id: "1732184400.000100",
      channelId: "C1",
      timestamp: "2024-11-21T10:20:00.000Z",
      sender: { id: "U0ALICE", username: "alice", displayName: "Alice", isBot: false },
      text: "@mom hi & bye",
      rawText: "<@UBOT> hi &amp; bye",
      isMention: true,
      isDirect: false,
    });
  });

  it("thread replies answer in their thread; plain messages and other bots do not trigger", () => {
    const ctx = { botUserId: "UBOT", sender: alice, names, isDirect: false };
    expect(toChannelMessage({ channel: "C1", ts: "2.000002", thread_ts: "1.000001", text: "no mention" }, ctx)).toMatchObject({ replyTo: "1.000001", isMention: false });
    expect(toChannelMessage({ channel: "C1", ts: "1.000001", thread_ts: "1.000001", text: "<@UBOT>" }, ctx).replyTo).toBeUndefined();
    expect(toChannelMessage({ channel: "C1", ts: "3.0", text: "<@UBOT> loop?" }, { ...ctx, sender: { id: "B1", username: "otherbot", isBot: true } }).isMention).toBe(false);
    expect(toChannelMessage({ channel: "D1", ts: "4.0", text: "hello" }, { ...ctx, isDirect: true })).toMatchObject({ isMention: true, isDirect: true });
  });

  it("only what people say counts: edits, deletions and joins are not messages", () => {
    expect(isConversationMessage({ channel: "C1", ts: "1.0" })).toBe(true);
    expect(isConversationMessage({ channel: "C1", ts: "1.0", subtype: "file_share" })).toBe(true);
    expect(isConversationMessage({ channel: "C1", ts: "1.0", subtype: "thread_broadcast" })).toBe(true);
    for (const subtype of ["message_changed", "message_deleted", "channel_join", "channel_topic"]) expect(isConversationMessage({ channel: "C1", ts: "1.0", subtype })).toBe(false);
  });
});

describe("ts helpers", () => {
  it("orders ts exactly and converts them to ISO", () => {
    expect(compareTs("1732184400.000100", "1732184400.000099")).toBe(1);
    expect(compareTs("999999999.999999", "1000000000.000000")).toBe(-1);
    expect(compareTs("1.5", "1.500000")).toBe(0);
    expect(tsToIso("1732184400.123456")).toBe("2024-11-21T10:20:00.123Z");
  });
});

describe("stop", () => {
  it.each(["stop", "@mom stop", "Stop!", " STOP. "])("%j is a stop", (t) => expect(isStopText(t)).toBe(true));
  it.each(["stop it now", "don't stop", "@mom please stop the build"])("%j is not", (t) => expect(isStopText(t)).toBe(false));
});
