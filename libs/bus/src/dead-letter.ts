import type { DeadLetter } from "@mom/contracts";

export interface DeadLetterInput {
  subject: string;
  data: Uint8Array | string;
  reason: string;
  msgId?: string;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Builds the DLQ payload: the rejected bytes as UTF-8 text when they are valid UTF-8, else base64. */
export function buildDeadLetter(stage: string, input: DeadLetterInput, now = new Date()): DeadLetter {
  let payload: string;
  let payloadEncoding: DeadLetter["payloadEncoding"];
  if (typeof input.data === "string") {
    payload = input.data;
    payloadEncoding = "utf8";
  } else {
    try {
      payload = strictUtf8.decode(input.data);
      payloadEncoding = "utf8";
    } catch {
      payload = Buffer.from(input.data).toString("base64");
      payloadEncoding = "base64";
    }
  }
  const letter: DeadLetter = {
    stage,
    subject: input.subject,
    reason: input.reason,
    payload,
    payloadEncoding,
    rejectedAt: now.toISOString(),
  };
  if (input.msgId) letter.msgId = input.msgId;
  return letter;
}
