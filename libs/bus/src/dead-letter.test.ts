import { describe, expect, it } from "@jest/globals";
import { DeadLetter, validator } from "@mom/contracts";
import { buildDeadLetter, DEAD_LETTER_HEAD_BYTES } from "./dead-letter.js";
import { retryDelayMs } from "./process-message.js";

const check = validator(DeadLetter);

describe("buildDeadLetter", () => {
  const now = new Date("2025-01-02T03:04:05.000Z");

  it("keeps valid UTF-8 bytes as text and matches the DeadLetter schema", () => {
    const letter = buildDeadLetter("agent-runner", { subject: "mom.in.cli.x", data: new TextEncoder().encode("héllo ✓"), reason: "bad", msgId: "m1" }, now);
    expect(letter).toEqual({
      stage: "agent-runner",
      subject: "mom.in.cli.x",
      reason: "bad",
      payload: "héllo ✓",
      payloadEncoding: "utf8",
      payloadBytes: 10,
      msgId: "m1",
      rejectedAt: "2025-01-02T03:04:05.000Z",
    });
    expect(check.check(letter).ok).toBe(true);
  });

  it("base64-encodes bytes that are not valid UTF-8 (and omits a missing msgId)", () => {
    const bytes = new Uint8Array([0x7b, 0xc3, 0x28]);
    const letter = buildDeadLetter("x", { subject: "s", data: bytes, reason: "r" }, now);
    expect(letter.payloadEncoding).toBe("base64");
    expect(Buffer.from(letter.payload, "base64")).toEqual(Buffer.from(bytes));
    expect("msgId" in letter).toBe(false);
    expect(check.check(letter).ok).toBe(true);
  });

  it("takes string data as UTF-8 text", () => {
    expect(buildDeadLetter("x", { subject: "s", data: "{oops", reason: "r" }, now)).toMatchObject({ payload: "{oops", payloadEncoding: "utf8" });
  });

  it("keeps only the head of a payload too big to copy, cut at a character boundary, with its size", () => {
    const text = `{"text":"${"é".repeat(DEAD_LETTER_HEAD_BYTES)}"}`;
    const letter = buildDeadLetter("x", { subject: "s", data: new TextEncoder().encode(text), reason: "r" }, now);
    expect(letter).toMatchObject({ payloadEncoding: "utf8", payloadBytes: Buffer.byteLength(text), payloadTruncated: true });
    expect(Buffer.byteLength(letter.payload)).toBeLessThanOrEqual(DEAD_LETTER_HEAD_BYTES);
    expect(text.startsWith(letter.payload)).toBe(true);
    expect(check.check(letter).ok).toBe(true);
  });

  it("keeps a base64 head of big binary input", () => {
    const bytes = new Uint8Array(DEAD_LETTER_HEAD_BYTES * 2).fill(0xff);
    const letter = buildDeadLetter("x", { subject: "s", data: bytes, reason: "r" }, now);
    expect(letter).toMatchObject({ payloadEncoding: "base64", payloadBytes: bytes.length, payloadTruncated: true });
    expect(Buffer.from(letter.payload, "base64")).toHaveLength(DEAD_LETTER_HEAD_BYTES);
  });
});

describe("retryDelayMs", () => {
  it("grows 250 ms per delivery and caps at 10 s", () => {
    expect([1, 2, 4, 100].map(retryDelayMs)).toEqual([250, 500, 1000, 10_000]);
  });
});
