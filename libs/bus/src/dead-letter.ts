import type { DeadLetter } from "@mom/contracts";

export interface DeadLetterInput {
  subject: string;
  data: Uint8Array | string;
  reason: string;
  msgId?: string;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Most of a rejected payload a dead letter copies. A payload near NATS's max_payload (1 MiB by
 * default) copied whole, JSON-escaped and wrapped would not fit in the dead letter's own publish,
 * and the rejection would be lost; 64 KiB stays under it even when every byte needs escaping.
 */
export const DEAD_LETTER_HEAD_BYTES = 64 * 1024;

/**
 * Builds the DLQ payload: the rejected bytes as UTF-8 text when they are valid UTF-8, else base64;
 * of a payload larger than DEAD_LETTER_HEAD_BYTES only its head, marked truncated.
 */
export function buildDeadLetter(stage: string, input: DeadLetterInput, now = new Date()): DeadLetter {
  const bytes = typeof input.data === "string" ? Buffer.from(input.data, "utf8") : input.data;
  const truncated = bytes.length > DEAD_LETTER_HEAD_BYTES;
  const head = truncated ? bytes.subarray(0, DEAD_LETTER_HEAD_BYTES) : bytes;
  let payload: string;
  let payloadEncoding: DeadLetter["payloadEncoding"];
  try {
    payload = strictUtf8.decode(truncated ? trimPartialChar(head) : head);
    payloadEncoding = "utf8";
  } catch {
    payload = Buffer.from(head).toString("base64");
    payloadEncoding = "base64";
  }
  const letter: DeadLetter = {
    stage,
    subject: input.subject,
    reason: input.reason,
    payload,
    payloadEncoding,
    payloadBytes: bytes.length,
    ...(truncated && { payloadTruncated: true }),
    rejectedAt: now.toISOString(),
  };
  if (input.msgId) letter.msgId = input.msgId;
  return letter;
}

/** Drops a UTF-8 sequence cut off by the head's end, so text stays text. */
function trimPartialChar(head: Uint8Array): Uint8Array {
  for (let back = 1; back <= 3 && back <= head.length; back++) {
    const b = head[head.length - back]!;
    if ((b & 0xc0) !== 0x80) {
      // b starts a sequence: keep it only if all of its bytes are here
      const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
      return need > back ? head.subarray(0, head.length - back) : head;
    }
  }
  return head;
}
