// How bus traffic is read back for people (`mom replay`, `mom tail`, the web console): one entry per
// stored message, decoded and checked against its contract, and a channel's window interleaved
// from every stream. The single place that decides how a channel's history is read.
import {
  type ChannelMessage,
  ChannelMessage as ChannelMessageSchema,
  type ChannelRef,
  type ChannelSubjectKind,
  type ControlMessage,
  ControlMessage as ControlMessageSchema,
  type DeadLetter,
  DeadLetter as DeadLetterSchema,
  type OutboundEvent,
  OutboundEvent as OutboundEventSchema,
  parsePayload,
  qualifiedChannelId,
  type Receipt,
  Receipt as ReceiptSchema,
  type StreamKey,
  type Subjects,
  type Validator,
  validator,
} from "@mom/contracts";
import type { TSchema } from "typebox";
import ms from "ms";
import type { Bus } from "./bus.js";
import { type RangeStart, type RawMessage, readRange } from "./read-range.js";

export type EntryKind = ChannelSubjectKind | "dlq";

/** One stored message, decoded and checked against its contract. */
export type BusEntry = {
  kind: EntryKind;
  stream: string;
  seq: number;
  /** When JetStream stored it (ISO). */
  time: string;
  subject: string;
  /** `<adapter>/<channel>`; absent for dead letters. */
  channel?: string;
  msgId?: string;
} & (
  | { kind: "in"; data: ChannelMessage }
  | { kind: "out"; data: OutboundEvent }
  | { kind: "ctl"; data: ControlMessage }
  | { kind: "receipts"; data: Receipt }
  | { kind: "dlq"; data: DeadLetter }
  | { kind: EntryKind; invalid: string; text: string }
);

const validators = {
  in: validator(ChannelMessageSchema),
  out: validator(OutboundEventSchema),
  ctl: validator(ControlMessageSchema),
  receipts: validator(ReceiptSchema),
  dlq: validator(DeadLetterSchema),
};

/** Decodes a raw message; a payload that breaks its contract is kept and shown as invalid. */
export function toEntry(m: RawMessage, subjects: Subjects): BusEntry {
  const ref = subjects.parse(m.subject);
  const kind: EntryKind = ref?.kind ?? "dlq";
  const base = { kind, stream: m.stream, seq: m.seq, time: m.time.toISOString(), subject: m.subject, ...(ref && { channel: qualifiedChannelId(ref) }), ...(m.msgId && { msgId: m.msgId }) };
  const parsed = parsePayload(validators[kind] as Validator<TSchema>, m.text);
  return (parsed.ok ? { ...base, data: parsed.value } : { ...base, invalid: parsed.reason, text: m.text }) as BusEntry;
}

/** Interleaves entries read from several streams by the time they were stored (stable per stream). */
export function interleave(lists: BusEntry[][]): BusEntry[] {
  return lists
    .flat()
    .map((e, i) => ({ e, i }))
    .sort((a, b) => a.e.time.localeCompare(b.e.time) || a.i - b.i)
    .map(({ e }) => e);
}

/** Messages of a window that the stream no longer holds: its limits removed them. */
export interface AgedOut {
  stream: string;
  /** The oldest message the stream still holds. */
  firstSeq: number;
  firstTime: string;
  maxAge: string;
  /** The stream's byte limit, when it has one (old messages are dropped to stay under it too). */
  maxBytes?: number;
}

export interface ChannelWindow {
  entries: BusEntry[];
  agedOut: AgedOut[];
}

const KINDS: Array<[ChannelSubjectKind, StreamKey]> = [
  ["in", "IN"],
  ["out", "OUT"],
  ["ctl", "CTL"],
  ["receipts", "RECEIPTS"],
];

/**
 * Everything a channel's subjects hold in a window, from every stream, interleaved by the time
 * it was stored, plus the dead letters rejected from those subjects. Ordered consumers only.
 */
export async function readChannelWindow(bus: Bus, ref: ChannelRef, w: { since?: Date; until?: Date; fromSeq?: number }): Promise<ChannelWindow> {
  const s = bus.subjects;
  const lists: BusEntry[][] = [];
  const agedOut: AgedOut[] = [];
  let since = w.since;
  const subjectsOfChannel = new Set(KINDS.map(([kind]) => s.channel(kind, ref)));
  for (const [kind, key] of [...KINDS, ["dlq", "DLQ"] as const]) {
    const stream = s.stream(key);
    const info = await bus.streamInfo(key);
    if (!info) continue; // nothing was ever sent
    const start: RangeStart = key === "IN" && w.fromSeq !== undefined ? { seq: w.fromSeq } : since ? { time: since } : w.fromSeq !== undefined ? "new" : "first";
    const { first_seq: firstSeq, first_ts: firstTs, last_seq: lastSeq } = info.state;
    const wantedBefore = typeof start === "object" && ("seq" in start ? start.seq < firstSeq : start.time.getTime() < Date.parse(firstTs));
    // Messages 1..firstSeq-1 existed once; a window that reaches back before firstSeq lost some of them.
    if (firstSeq > 1 && lastSeq > 0 && (start === "first" || wantedBefore) && kind !== "dlq") {
      const maxBytes = info.config.max_bytes > 0 ? info.config.max_bytes : undefined;
      agedOut.push({ stream, firstSeq, firstTime: firstTs, maxAge: info.config.max_age ? ms(Math.round(info.config.max_age / 1e6), { long: true }) : "no age limit", ...(maxBytes && { maxBytes }) });
    }
    const filter = kind === "dlq" ? s.wildcard("dlq") : s.channel(kind, ref);
    const raw = await readRange(bus, stream, filter, start, w.until);
    let entries = raw.map((m) => toEntry(m, s));
    if (kind === "dlq") entries = entries.filter((e) => "data" in e && subjectsOfChannel.has((e.data as { subject: string }).subject));
    // --from-seq names an inbound message: the other streams start where it was stored.
    if (key === "IN" && w.fromSeq !== undefined && !since) since = entries[0] ? new Date(entries[0].time) : undefined;
    lists.push(entries);
  }
  return { entries: interleave(lists), agedOut };
}
