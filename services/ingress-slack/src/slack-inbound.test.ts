import { describe, expect, it } from "@jest/globals";
import { compareTs, isConversationMessage, tsToIso } from "./slack-inbound.js";
import { isStopCommand as isStopText } from "@mom/ingress-sdk";

describe("isConversationMessage", () => {
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
