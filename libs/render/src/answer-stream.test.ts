import { describe, expect, it } from "@jest/globals";
import { MAX_EVENT_TEXT } from "@mom/contracts";
import { AnswerStream } from "./answer-stream.js";
import type { Ev } from "./run-view.js";

const delta = (text: string, contentIndex = 0): Ev<"message_update"> => ({ type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex, delta: text } });
const end = (...texts: string[]): Ev<"message_end"> => ({ type: "message_end", message: { role: "assistant", content: texts.map((text) => ({ type: "text", text })) } });

describe("AnswerStream", () => {
  it("writes deltas as they come and the line's newline at the message's end; the run's end need not write it again", () => {
    const a = new AnswerStream();
    expect([a.update("r", delta("Here ")), a.update("r", delta("you go.")), a.messageEnd("r", end("Here you go."))]).toEqual(["Here ", "you go.", "\n"]);
    expect(a.showed("Here you go.")).toBe(true);
    expect(a.showed("Something else.")).toBe(false);
  });

  it("completes from the message's end what was not streamed; a new block ends the line of the one before", () => {
    const a = new AnswerStream();
    expect(a.update("r", delta("Let me "))).toBe("Let me ");
    expect(a.messageEnd("r", end("Let me look.", "Two files."))).toBe("look.\nTwo files.\n");
    a.reset();
    expect(a.messageEnd("r2", end("Not streamed."))).toBe("Not streamed.\n");
    // A block cut for the bus: its deltas carry the whole text.
    const long = "x".repeat(MAX_EVENT_TEXT + 1);
    expect(new AnswerStream().messageEnd("r3", end(long))).toBe("");
  });

  it("holds back what may still be [SILENT], and writes nothing of a silent answer", () => {
    const a = new AnswerStream();
    expect([a.update("r", delta("[SIL")), a.update("r", delta("ENT]")), a.messageEnd("r", end("[SILENT]"))]).toEqual(["", "", ""]);
    expect(a.showed("[SILENT]")).toBe(false);
    const b = new AnswerStream();
    expect([b.update("r", delta("[S")), b.update("r", delta("ure]"))]).toEqual(["", "[Sure]"]);
    expect(b.update("r", { type: "message_update", assistantMessageEvent: { type: "thinking_delta", delta: "hmm" } })).toBe("");
  });
});
