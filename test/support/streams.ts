import type { Bus } from "@mom/bus";
import { ControlMessage, DeadLetter, OutboundEvent, parsePayload, Receipt, type StreamKey, validator } from "@mom/contracts";
import type { TSchema } from "typebox";

/** Every payload on `stream` so far (of one subject, when given) that is valid by `schema`, in stream order. */
async function payloads<T>(bus: Bus, stream: StreamKey, schema: TSchema, subject?: string): Promise<T[]> {
  const info = await bus.streamInfo(stream);
  if (!info) throw new Error(`stream ${stream} does not exist`);
  const v = validator(schema);
  const out: T[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await bus.storedMessage(stream, seq).catch(() => undefined);
    const r = m && (subject === undefined || m.subject === subject) ? parsePayload(v, m.data) : undefined;
    if (r?.ok) out.push(r.value as T);
  }
  return out;
}

/** Every valid outbound event of a channel so far, read back from the OUT stream in order. */
export function outboundEvents(bus: Bus, ref = { adapter: "cli", channelId: "local" }): Promise<OutboundEvent[]> {
  return payloads(bus, "OUT", OutboundEvent, bus.subjects.channel("out", ref));
}

/** Every valid ControlMessage of a channel so far, in stream order. */
export function controlMessagesOf(bus: Bus, ref: { adapter: string; channelId: string }): Promise<ControlMessage[]> {
  return payloads(bus, "CTL", ControlMessage, bus.subjects.channel("ctl", ref));
}

/** Every valid Receipt of a channel on the bus so far (the runner's tool receipts and the ingress's delivery receipts), in stream order. */
export function receiptsOf(bus: Bus, ref: { adapter: string; channelId: string }): Promise<Receipt[]> {
  return payloads(bus, "RECEIPTS", Receipt, bus.subjects.channel("receipts", ref));
}

/** Every dead letter so far (any stage), in stream order. */
export function deadLetters(bus: Bus): Promise<DeadLetter[]> {
  return payloads(bus, "DLQ", DeadLetter);
}
