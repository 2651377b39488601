import { type Bus, readRange } from "@mom/bus";
import { CHANNEL_SUBJECT_PAYLOADS, type ChannelSubjectKind, DeadLetter, parsePayload, qualifiedChannelId, validator, visible } from "@mom/contracts";

const checkLetter = validator(DeadLetter);

/** How much of a rejected payload the page shows; the rest is counted, not drawn. */
export const PAYLOAD_HEAD_CHARS = 600;

/** One dead letter as the page shows it (newest first). */
export interface DeadLetterRow {
  /** MOM_DLQ sequence */
  seq: number;
  /** When MOM_DLQ stored it */
  storedAt: string;
  /** Who rejected it (the DLQ subject's last token when the payload is not a dead letter itself) */
  stage: string;
  /** Where the rejected payload arrived */
  subject?: string;
  /** The channel that subject belongs to (cli/local), when it is a channel's subject */
  channel?: string;
  reason: string;
  /** The head of the payload, control and bidi characters spelled out (visible()) */
  head: string;
  /** Characters of the payload not shown here, plus what the rejecting service cut off itself */
  more: boolean;
  encoding?: string;
  bytes?: number;
  msgId?: string;
}

/**
 * The newest `limit` dead letters of MOM_DLQ (read-only: an ordered consumer from the sequence
 * `limit` before the last). A payload on mom.dlq.> that is not a dead letter is still listed, with
 * why it is not one.
 */
export async function readDeadLetters(bus: Bus, limit = 200): Promise<{ rows: DeadLetterRow[]; total: number }> {
  const info = await bus.streamInfo("DLQ");
  if (!info || info.state.messages === 0) return { rows: [], total: 0 };
  const from = Math.max(info.state.first_seq, info.state.last_seq - limit + 1);
  const raw = await readRange(bus, bus.subjects.stream("DLQ"), bus.subjects.wildcard("dlq"), { seq: from });
  const rows = raw.map((m) => readLetter(bus, m.seq, m.subject, m.time, m.text).row);
  return { rows: rows.reverse(), total: info.state.messages };
}

/** A message of MOM_DLQ as a row, and the dead letter it holds (none when the payload is not one). */
function readLetter(bus: Bus, seq: number, dlqSubject: string, time: Date, text: string): { row: DeadLetterRow; letter?: DeadLetter } {
  const stage = dlqSubject.split(".").pop() ?? dlqSubject;
  const parsed = parsePayload(checkLetter, text);
  if (!parsed.ok) return { row: { seq, storedAt: time.toISOString(), stage, reason: `not a dead letter: ${parsed.reason}`, head: headOf(text), more: text.length > PAYLOAD_HEAD_CHARS } };
  const l = parsed.value;
  const row: DeadLetterRow = {
    seq,
    storedAt: time.toISOString(),
    stage: l.stage,
    subject: l.subject,
    ...channelOf(bus, l.subject),
    reason: l.reason,
    head: headOf(l.payload),
    more: l.payload.length > PAYLOAD_HEAD_CHARS || l.payloadTruncated === true,
    encoding: l.payloadEncoding,
    ...(l.payloadBytes !== undefined && { bytes: l.payloadBytes }),
    ...(l.msgId !== undefined && { msgId: l.msgId }),
  };
  return { row, letter: l };
}

function headOf(text: string): string {
  return visible(text.slice(0, PAYLOAD_HEAD_CHARS), { newlines: true });
}

function channelOf(bus: Bus, subject: string): { channel?: string } {
  const ref = bus.subjects.parse(subject);
  return ref ? { channel: qualifiedChannelId(ref) } : {};
}

/** One dead letter read whole, for the page that re-publishes a fixed payload. */
export interface DeadLetterDetail {
  row: DeadLetterRow;
  /** The rejected payload as it arrived (the head only when the rejecting service cut it off) */
  payload?: string;
  /** Where a fixed payload goes, and the contract it must pass; or why it cannot be re-published */
  target: { kind: RepublishKind; subject: string } | { why: string };
}

/** The channel subjects a fixed payload may be put back on: inbound messages and control messages. */
export type RepublishKind = Extract<ChannelSubjectKind, "in" | "ctl">;
const REPUBLISHABLE: readonly ChannelSubjectKind[] = ["in", "ctl"];

/** The dead letter at MOM_DLQ sequence `seq`, or undefined when there is none (aged out, never there). */
export async function readDeadLetter(bus: Bus, seq: number): Promise<DeadLetterDetail | undefined> {
  const m = await bus.storedMessage("DLQ", seq);
  if (!m) return undefined;
  const { row, letter: l } = readLetter(bus, seq, m.subject, m.time, Buffer.from(m.data).toString("utf8"));
  if (!l) return { row, target: { why: "this message of MOM_DLQ is not a dead letter: there is no payload and subject to put back" } };
  const ref = bus.subjects.parse(l.subject);
  const target: DeadLetterDetail["target"] = !ref
    ? { why: `${l.subject} is not a channel subject of this namespace` }
    : !REPUBLISHABLE.includes(ref.kind)
      ? { why: `${l.subject} carries the runner's own ${ref.kind === "out" ? "outbound events" : "receipts"}: the console puts back only inbound (${bus.subjects.namespace}.in.…) and control (${bus.subjects.namespace}.ctl.…) messages` }
      : l.payloadEncoding === "base64"
        ? { why: "the payload is not UTF-8 text (stored as base64): it cannot be edited here" }
        : { kind: ref.kind as RepublishKind, subject: l.subject };
  return { row, ...(l.payloadEncoding === "utf8" && { payload: l.payload }), target };
}

/**
 * Whether `text` may go back on a subject of this kind: the very check its consumers make
 * (`parsePayload` with the subject's contract, as `bus.consume` does); the value to publish, or
 * the reason, worded as a dead letter's.
 */
export function checkRepublish(kind: RepublishKind, text: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  return parsePayload(validator(CHANNEL_SUBJECT_PAYLOADS[kind]), text);
}
